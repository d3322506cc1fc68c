"""The robust-max likelihood (issue 26; gpexplorer/likelihoods/pointwise_robustmax.py): the
one-dimensional quadrature of P(argmax f = y) against Monte Carlo, a closed form (K = 2), symmetry
and adaptive quadrature; its derivatives against finite differences (alone, through the
estimators and through the ELBO); exact predictions; a SparseVariationalGP that learns three
classes with L-BFGS and with minibatch Adam; and bad labels and options refused by name."""

import math

import numpy as np
import pytest
from scipy import integrate, special

from gpexplorer import kernels
from gpexplorer.likelihoods import LIKELIHOODS, RobustMax, expected_log_density, get_likelihood
from gpexplorer.variational import SparseVariationalGP, estimators


def moments(N, K, seed, low=0.3, high=1.5):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(N, K)), rng.uniform(low, high, size=(N, K)), rng.integers(0, K, N)


def brute_force(mean, var, labels, S=400_000, seed=1):
    """P(argmax f = y) by sampling f ~ N(mean, diag var): (estimate, standard error) per row."""
    F = mean + np.sqrt(var) * np.random.default_rng(seed).standard_normal((S,) + mean.shape)
    hit = (np.argmax(F, axis=-1) == labels).mean(axis=0)
    return hit, np.sqrt(hit * (1 - hit) / S)


# the likelihood itself (R1) -------------------------------------------------------------------------

def test_registered_with_its_kind_and_options():
    assert LIKELIHOODS["robust_max"] is RobustMax and RobustMax.kind == "categorical"
    lik = get_likelihood("robustmax", n_classes=10)
    assert (lik.n_latent, lik.epsilon, lik.n_points) == (10, 1e-3, 20) and lik.reduced_expectation


def test_log_density_probabilities_and_zero_slope():
    lik = RobustMax(4, epsilon=0.2)
    F = np.array([[0.3, 2.0, -1.0, 1.9], [5.0, 0.0, 0.0, 0.0]])
    p = lik.class_probabilities(F)
    np.testing.assert_allclose(p, [[0.2 / 3, 0.8, 0.2 / 3, 0.2 / 3], [0.8, 0.2 / 3, 0.2 / 3, 0.2 / 3]])
    np.testing.assert_allclose(lik.log_density(F, [[1], [1]]), [math.log(0.8), math.log(0.2 / 3)])
    np.testing.assert_array_equal(lik.dlog_density_df(F, [[1], [1]]), 0.0)
    np.testing.assert_allclose(lik.conditional_mean(F), p @ np.arange(4))
    assert lik.log_density(np.zeros((1, 4)), [[0]])[0] == pytest.approx(math.log(0.8))  # a tie: the first largest


# S_n = P(argmax f = y) (R3) ---------------------------------------------------------------------------

def test_probability_of_largest_matches_brute_force_monte_carlo():
    mean, var, y = moments(6, 5, seed=0)
    S = RobustMax(5).probability_of_largest(mean, var, y, n_points=40)
    hit, se = brute_force(mean, var, y)
    assert np.all(np.abs(S - hit) < 5 * se + 1e-4), (S, hit, se)


def test_the_expected_log_density_matches_monte_carlo_of_log_p():
    lik = RobustMax(4, epsilon=0.1)
    mean, var, y = moments(5, 4, seed=2)
    F = mean + np.sqrt(var) * np.random.default_rng(3).standard_normal((200_000, 5, 4))
    lp = lik.log_density(F, y[:, None])
    se = lp.std(0) / math.sqrt(F.shape[0])
    value = lik.expected_log_density_exact(mean, var, y[:, None], n_points=40).value
    assert np.all(np.abs(value - lp.mean(0)) < 5 * se + 1e-4), (value, lp.mean(0), se)


def test_two_classes_have_the_closed_form_and_its_derivatives():
    mean, var, y = moments(8, 2, seed=4)
    rows, other = np.arange(8), 1 - y
    V = var[rows, y] + var[rows, other]
    d = (mean[rows, y] - mean[rows, other]) / np.sqrt(V)
    S, dm, dv = RobustMax(2).probability_of_largest(mean, var, y, n_points=40, derivatives=True)
    np.testing.assert_allclose(S, special.ndtr(d), rtol=0, atol=1e-10)
    pdf = np.exp(-0.5 * d * d) / math.sqrt(2 * math.pi)
    np.testing.assert_allclose(dm[rows, y], pdf / np.sqrt(V), atol=1e-9)
    np.testing.assert_allclose(dm[rows, other], -pdf / np.sqrt(V), atol=1e-9)
    for j in (y, other):
        np.testing.assert_allclose(dv[rows, j], -pdf * d / (2 * V), atol=1e-9)


def test_symmetry_and_adaptive_quadrature_of_the_integral():
    lik = RobustMax(5)
    same = (np.full((5, 5), 0.7), np.full((5, 5), 2.0), np.arange(5))  # exchangeable latents: each wins 1/K
    np.testing.assert_allclose(lik.probability_of_largest(*same), 0.2, rtol=0, atol=2e-6)  # 20 nodes
    np.testing.assert_allclose(lik.probability_of_largest(*same, n_points=60), 0.2, rtol=0, atol=1e-13)
    mean, var, y = moments(3, 5, seed=5, low=0.2, high=3.0)
    for n in range(3):
        s = np.sqrt(var[n])
        others = [j for j in range(5) if j != y[n]]

        def integrand(x, n=n, s=s, others=others):
            return (math.exp(-0.5 * ((x - mean[n, y[n]]) / s[y[n]]) ** 2) / (s[y[n]] * math.sqrt(2 * math.pi))
                    * np.prod(special.ndtr((x - mean[n, others]) / s[others])))

        reference = integrate.quad(integrand, -np.inf, np.inf, epsabs=1e-13, epsrel=1e-12)[0]
        rows = slice(n, n + 1)
        # Phi((x - m_j) / s_j) is steep where s_j << s_y (here down to a third): 20 nodes are 1e-3 off
        assert abs(lik.probability_of_largest(mean[rows], var[rows], y[rows])[0] - reference) < 1e-3
        got = lik.probability_of_largest(mean[rows], var[rows], y[rows], n_points=100)[0]
        assert abs(got - reference) < 1e-9, (n, got, reference)


def test_matches_gpflow_multiclass_variational_expectations():
    """Values of GPflow 2.11's MultiClass(4).variational_expectations (RobustMax, eps = 1e-3, 20
    nodes) at these moments, recorded once; GPflow squashes each Phi into [1e-6, 1 - 1e-6]."""
    rng = np.random.default_rng(0)
    mean, var, y = rng.normal(size=(5, 4)), rng.uniform(0.1, 2, size=(5, 4)), rng.integers(0, 4, 5)
    gpflow = [-4.06304846, -4.19245311, -7.23970146, -3.56240848, -5.64917035]
    np.testing.assert_allclose(RobustMax(4).expected_log_density_exact(mean, var, y).value, gpflow, atol=3e-5)


# derivatives (R4) ------------------------------------------------------------------------------------

def test_derivatives_match_finite_differences():
    lik = RobustMax(5, epsilon=0.01)
    mean, var, y = moments(6, 5, seed=6)
    Y = y[:, None]
    out = lik.expected_log_density_exact(mean, var, Y)
    assert out.dparams == {} and np.all(np.abs(out.dmean) > 0)
    np.testing.assert_allclose(out.dmean.sum(axis=1), 0.0, atol=1e-12)  # a common shift changes nothing
    h = 1e-6
    for j in range(5):
        e = np.zeros(5)
        e[j] = h
        fd_m = (lik.expected_log_density_exact(mean + e, var, Y).value
                - lik.expected_log_density_exact(mean - e, var, Y).value) / (2 * h)
        fd_v = (lik.expected_log_density_exact(mean, var + e, Y).value
                - lik.expected_log_density_exact(mean, var - e, Y).value) / (2 * h)
        np.testing.assert_allclose(out.dmean[:, j], fd_m, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(out.dvar[:, j], fd_v, rtol=1e-6, atol=1e-8)


def test_derivatives_stay_finite_in_the_tails():
    lik = RobustMax(3)
    mean = np.array([[40.0, 0.0, -40.0], [0.0, 0.0, 0.0]])
    var = np.array([[1e-12, 1e-12, 1e-12], [1e-12, 1.0, 1e6]])
    out = lik.expected_log_density_exact(mean, var, [[2], [0]])
    assert all(np.all(np.isfinite(a)) for a in out[:3])
    assert out.value[0] == pytest.approx(lik.log_miss)


def test_the_estimators_take_the_exact_expectation_for_any_q():
    lik = RobustMax(10)
    rng = np.random.default_rng(7)
    b, var, y = rng.normal(size=(2, 8, 10)), rng.uniform(0.2, 1.0, size=(2, 8, 10)), rng.integers(0, 10, 8)
    Y = y[:, None].astype(float)
    exact = [lik.expected_log_density_exact(b[k], var[k], Y) for k in range(2)]
    for method in ("quadrature", "reparam"):
        for est in (estimators.estimate(lik, b, var, Y, method),
                    estimators.estimate_reference(lik, b, var, Y, method, num_samples=5)):
            for k in range(2):
                np.testing.assert_array_equal(est.value[k], exact[k].value)
                np.testing.assert_array_equal(est.dmean[k], exact[k].dmean)
                np.testing.assert_array_equal(est.dvar[k], exact[k].dvar)
            assert est.method == method and not np.any(est.report["dmean"])
    np.testing.assert_array_equal(expected_log_density(lik, b[0], var[0], Y).value, exact[0].value)
    score = estimators.estimate(lik, b, var, Y, "score", num_samples=20_000)  # the black box, untouched
    assert np.all(np.abs(score.value - np.stack([e.value for e in exact])) < 5 * np.sqrt(score.report["value"]) + 1e-3)


def test_elbo_gradient_matches_finite_differences():
    X, y = three_classes(30, seed=8)
    m = SparseVariationalGP(X, y, kernels.SquaredExponential(), 4, "robust_max", likelihood_options={"n_classes": 3},
                            estimator="quadrature")
    free = m.posterior.free + 0.3 * np.random.default_rng(9).standard_normal(m.posterior.num_free)
    m.set_parameters(posterior=free)
    _, grads = m.elbo(eval_gradient=True)
    h = 1e-6
    for i in np.random.default_rng(10).choice(free.size, 6, replace=False):
        e = np.zeros(free.size)
        e[i] = h
        fd = (m.set_parameters(posterior=free + e).elbo() - m.set_parameters(posterior=free - e).elbo()) / (2 * h)
        assert grads["posterior"][i] == pytest.approx(fd, rel=1e-5, abs=1e-6), i
    m.set_parameters(posterior=free)
    ls = m.parameters["kernel0.lengthscale"]
    fd = (m.set_parameters(**{"kernel0.lengthscale": ls + h}).elbo()
          - m.set_parameters(**{"kernel0.lengthscale": ls - h}).elbo()) / (2 * h)
    assert grads["kernel0.lengthscale"] == pytest.approx(fd, rel=1e-5, abs=1e-6)


# predictions (R5) -----------------------------------------------------------------------------------

def test_predictive_class_probabilities_match_monte_carlo():
    lik = RobustMax(4, epsilon=0.05)
    mean, var, _ = moments(5, 4, seed=11)
    p = lik.predictive_class_probabilities(mean, var, n_points=40)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
    F = mean + np.sqrt(var) * np.random.default_rng(12).standard_normal((200_000, 5, 4))
    mc = lik.class_probabilities(F).mean(axis=0)
    assert np.all(np.abs(p - mc) < 5 * np.sqrt(p * (1 - p) / F.shape[0]) + 1e-4), (p, mc)
    point = lik.predictive_class_probabilities(mean, np.zeros_like(var))  # zero variance: (R1) at the mean
    np.testing.assert_allclose(point, lik.class_probabilities(mean), atol=1e-12)
    with pytest.raises(ValueError, match="shape"):
        lik.predictive_class_probabilities(mean[:, :3], var[:, :3])


def three_classes(N, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(N, 2))
    g = np.stack([np.sin(1.5 * X[:, 0]), np.cos(1.5 * X[:, 1]), -0.5 * X[:, 0] * X[:, 1]], axis=1)
    return X, np.argmax(g, axis=1).astype(float)


@pytest.fixture(scope="module")
def trained():
    X, y = three_classes(150, seed=0)
    m = SparseVariationalGP(X, y, kernels.SquaredExponential(), 10, "robust_max", likelihood_options={"n_classes": 3},
                            estimator="quadrature", seed=0)
    start = m.elbo()
    result = m.fit(max_iter=150, method="lbfgs")
    return m, start, result


def test_lbfgs_learns_three_classes(trained):
    m, start, result = trained
    Xt, yt = three_classes(400, seed=1)
    assert -result.objective > start + 400
    assert m.error_rate(Xt, yt) < 0.12 and m.nlpd(Xt, yt) < 0.35


def test_model_predictions_are_the_exact_mixture_probabilities(trained):
    m, _, _ = trained
    Xt, yt = three_classes(20, seed=2)
    pi, means, var = m.predict_components(Xt)
    expected = sum(w * m.likelihood.predictive_class_probabilities(b, v) for w, b, v in zip(pi, means, var))
    p = m.predict_class_probabilities(Xt)
    np.testing.assert_allclose(p, expected, rtol=0, atol=1e-9)  # BLAS threads differ in the last digits
    np.testing.assert_allclose(m.predict_log_density(Xt, yt), np.log(p[np.arange(20), yt.astype(int)]), rtol=1e-12)
    mean, variance = m.predict_y(Xt)
    k = np.arange(3)
    np.testing.assert_allclose(mean[:, 0], p @ k)
    np.testing.assert_allclose(variance[:, 0], p @ k ** 2 - (p @ k) ** 2, atol=1e-12)
    assert m.error_rate(Xt, yt) == np.mean(np.argmax(p, axis=1) != yt)


def test_minibatch_adam_learns_three_classes_with_the_reparameterised_estimator():
    X, y = three_classes(150, seed=0)
    m = SparseVariationalGP(X, y, kernels.SquaredExponential(), 10, "robust_max", likelihood_options={"n_classes": 3},
                            estimator="reparam", num_samples=4, seed=0)
    start = m.elbo()
    assert start == pytest.approx(SparseVariationalGP(X, y, kernels.SquaredExponential(), 10, "robust_max",
                                                      likelihood_options={"n_classes": 3}).elbo(), rel=1e-12)
    m.fit(max_iter=300, method="adam", batch_size=50, learning_rate=0.05, trace_every=50)
    Xt, yt = three_classes(400, seed=1)
    assert m.elbo() > start + 400 and m.error_rate(Xt, yt) < 0.12


# bad input -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("Y, message", [([[0], [1.5]], "integer class labels"), ([[0], [3]], "labels in 0..2"),
                                        ([[-1], [0]], "labels in 0..2"), ([[0], [np.nan]], "NaN")])
def test_validate_refuses_bad_labels(Y, message):
    with pytest.raises(ValueError, match=message):
        RobustMax(3).validate(Y)
    with pytest.raises(ValueError, match=message):
        RobustMax(3).probability_of_largest(np.zeros((2, 3)), np.ones((2, 3)), np.asarray(Y, dtype=float)[:, 0])
    with pytest.raises(ValueError, match=message):
        RobustMax(3).expected_log_density_exact(np.zeros((2, 3)), np.ones((2, 3)), Y)


def test_moments_of_the_wrong_shape_or_sign_are_refused():
    lik = RobustMax(3)
    with pytest.raises(ValueError, match="shape"):
        lik.probability_of_largest(np.zeros((2, 4)), np.ones((2, 4)), [0, 1])
    with pytest.raises(ValueError, match="positive"):
        lik.probability_of_largest(np.zeros((2, 3)), np.zeros((2, 3)), [0, 1])
    with pytest.raises(ValueError, match="var must be positive"):
        lik.expected_log_density_exact(np.zeros((2, 3)), -np.ones((2, 3)), [[0], [1]])


@pytest.mark.parametrize("options, name", [({"n_classes": 1}, "n_classes"), ({"n_classes": 2.0}, "n_classes"),
                                           ({"epsilon": 0.0}, "epsilon"), ({"epsilon": 0.5, "n_classes": 2}, "epsilon"),
                                           ({"epsilon": "0.1"}, "epsilon"), ({"epsilon": [0.1]}, "epsilon"),
                                           ({"epsilon": math.nan}, "epsilon"), ({"n_points": 0}, "n_points")])
def test_bad_options_are_refused_by_name(options, name):
    with pytest.raises(ValueError, match=name):
        RobustMax(**options)


def test_the_black_box_lab_does_not_offer_it():
    """The lab's data sets have no categorical labels: its capability filter (likelihood kinds)
    leaves robust max out, and the setting refuses it."""
    from gpexplorer.ui.black_box.settings import LIKELIHOOD_CHOICES, BlackBoxSettings

    assert "robust_max" not in LIKELIHOOD_CHOICES.values()
    with pytest.raises(ValueError):
        BlackBoxSettings(likelihood="robust_max")
