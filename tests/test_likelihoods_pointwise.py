"""Pointwise likelihoods for SAVIGP (issue 16): densities normalise, samplers match the
conditional moments, derivatives match finite differences, quadrature matches closed forms and
Monte Carlo, and bad inputs are refused with useful messages."""

import math

import numpy as np
import pytest
from scipy import integrate, special

from gpexplorer.likelihoods import (LIKELIHOODS, BernoulliLogit, BernoulliProbit, Binomial, Gaussian, PointwiseLikelihood,
                                    Poisson, RobustMax, Softmax, WarpedGaussian, expected_log_density, gauss_hermite,
                                    get_likelihood)
from gpexplorer.parameters import Parameter

CASES = {
    "gaussian": lambda: Gaussian(variance=0.7),
    "bernoulli_logit": BernoulliLogit,
    "bernoulli_probit": BernoulliProbit,
    "poisson": lambda: Poisson(offset=math.log(191 / 811), binsize=1.5),
    "binomial": lambda: Binomial(trials=7),
    "softmax": lambda: Softmax(3),
    "robust_max": lambda: RobustMax(3, epsilon=0.05),
    "warped_gaussian": lambda: WarpedGaussian(variance=0.3, a=(0.8, 0.5, 1.2), b=(1.5, 0.7, 2.0), c=(-0.5, 0.3, 1.0)),
}
CONTINUOUS = {"gaussian", "warped_gaussian"}


def latents(lik, N, seed=0, scale=1.5):
    return scale * np.random.default_rng(seed).standard_normal((N, lik.n_latent))


def data(lik, N=6, seed=0):
    F = latents(lik, N, seed)
    return F, lik.sample(F, np.random.default_rng(seed + 100))[..., 0][:, None]


def test_every_registered_likelihood_is_tested():
    assert set(CASES) == set(LIKELIHOODS)
    assert all(isinstance(CASES[n](), LIKELIHOODS[n]) for n in CASES)


# normalisation ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", CASES)
def test_density_normalises_over_y(name):
    lik = CASES[name]()
    for f in latents(lik, 4, seed=1):
        if name in CONTINUOUS:
            def density(y):
                return math.exp(lik.log_density(f[None, :], [[y]])[0])

            mode = float(lik.conditional_mean(f[None, :])[0])
            total = sum(integrate.quad(density, lo, hi, epsabs=1e-13, epsrel=1e-12, limit=200)[0]
                        for lo, hi in ((-np.inf, mode), (mode, np.inf)))
        else:
            if name == "poisson":
                lam = float(lik.conditional_mean(f[None, :])[0])
                support = np.arange(int(lam + 40 * math.sqrt(lam) + 60))
            elif name in ("softmax", "robust_max"):
                support = np.arange(lik.n_classes)
            elif name == "binomial":
                support = np.arange(lik.trials + 1.0)
            else:
                support = np.array([0.0, 1.0])
            F = np.broadcast_to(f, (support.size, lik.n_latent))
            total = np.exp(lik.log_density(F, support[:, None])).sum()
        assert abs(total - 1.0) < 1e-8, (name, f, total)


# samplers against the conditional moments -------------------------------------------------------

@pytest.mark.parametrize("name", CASES)
def test_sampler_matches_conditional_mean_and_variance(name):
    lik = CASES[name]()
    F = latents(lik, 5, seed=2, scale=1.0)
    S = 200_000
    draws = lik.sample(np.broadcast_to(F, (S,) + F.shape), np.random.default_rng(3))
    assert draws.shape == (S, 5, 1)
    y = draws[..., 0]
    mean, var = lik.conditional_mean(F), lik.conditional_variance(F)
    se_mean = np.sqrt(var / S)
    assert np.all(np.abs(y.mean(0) - mean) < 5 * se_mean + 1e-12), (y.mean(0), mean)
    centred = y - mean
    se_var = np.sqrt(np.maximum(np.mean(centred ** 4, 0) - var ** 2, 0) / S)
    assert np.all(np.abs(np.mean(centred ** 2, 0) - var) < 5 * se_var + 1e-12), (y.var(0), var)


def test_softmax_sampler_matches_class_probabilities():
    lik = Softmax(4)
    F = latents(lik, 3, seed=9)
    S = 200_000
    labels = lik.sample(np.broadcast_to(F, (S,) + F.shape), np.random.default_rng(10))[..., 0]
    freq = (labels[..., None] == np.arange(4)).mean(0)  # (3, 4)
    p = lik.class_probabilities(F)
    np.testing.assert_allclose(p.sum(-1), 1.0)
    assert np.all(np.abs(freq - p) < 5 * np.sqrt(p * (1 - p) / S) + 1e-12), (freq, p)


def test_sample_keeps_leading_axes_and_takes_a_seed():
    lik = Gaussian()
    F = np.zeros((2, 3, 4, 1))
    assert lik.sample(F, 0).shape == (2, 3, 4, 1)
    np.testing.assert_array_equal(lik.sample(F, 7), lik.sample(F, np.random.default_rng(7)))


# derivatives against finite differences ---------------------------------------------------------

@pytest.mark.parametrize("name", CASES)
def test_dlog_density_df_matches_finite_differences(name):
    lik = CASES[name]()
    F, Y = data(lik)
    F = np.stack([F, latents(lik, 6, seed=5)])  # a leading sample axis
    grad = lik.dlog_density_df(F, Y)
    assert grad.shape == F.shape
    h = 1e-6
    for q in range(lik.n_latent):
        step = np.zeros(lik.n_latent)
        step[q] = h
        fd = (lik.log_density(F + step, Y) - lik.log_density(F - step, Y)) / (2 * h)
        np.testing.assert_allclose(grad[..., q], fd, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", CASES)
def test_dlog_density_dparams_matches_finite_differences(name):
    lik = CASES[name]()
    F, Y = data(lik)
    grads = lik.dlog_density_dparams(F, Y)
    assert set(grads) == set(lik.parameter_specs)
    if name in CONTINUOUS:
        assert "variance" in grads
    h = 1e-6
    for pname, value in lik.parameters.items():
        value = np.atleast_1d(np.asarray(value, dtype=float))
        g = grads[pname].reshape(F.shape[0], -1)
        assert g.shape[1] == value.size
        for i in range(value.size):
            up, down = value.copy(), value.copy()
            up[i] += h
            down[i] -= h
            shape = np.shape(lik.parameters[pname])
            fd = (lik.copy().set_parameters(**{pname: up.reshape(shape)}).log_density(F, Y)
                  - lik.copy().set_parameters(**{pname: down.reshape(shape)}).log_density(F, Y)) / (2 * h)
            np.testing.assert_allclose(g[:, i], fd, rtol=1e-6, atol=1e-7, err_msg=f"{pname}[{i}]")


def test_bernoulli_and_poisson_stay_finite_in_the_tails():
    F = np.array([[-40.0], [40.0], [-40.0], [40.0]])
    Y = np.array([[1.0], [0.0], [0.0], [1.0]])
    for lik in (BernoulliLogit(), BernoulliProbit()):
        lp, g = lik.log_density(F, Y), lik.dlog_density_df(F, Y)[:, 0]
        assert np.all(np.isfinite(lp)) and np.all(np.isfinite(g))
        assert lp[0] < -39 and lp[2] > -1e-15 and g[0] > 0.9 and abs(g[2]) < 1e-15
    np.testing.assert_allclose(BernoulliProbit().dlog_density_df([[-40.0]], [[1]])[0, 0], 40.0, rtol=1e-3)
    assert np.isfinite(Poisson().log_density([[-50.0]], [[0]]))


def test_the_probit_slope_is_the_inverse_mills_ratio_without_overflow_at_absurd_f():
    """An L-BFGS probe can put f at 1e200: the slope phi(z)/Phi(z) must stay finite and quiet (the old
    exp(-z^2/2 - log_ndtr(z)) overflowed in z^2 and gave nan); in the usual range it is unchanged."""
    lik = BernoulliProbit()
    z = np.linspace(-30, 8, 77)
    ref = np.exp(-0.5 * z * z - 0.5 * math.log(2 * math.pi) - special.log_ndtr(z))
    np.testing.assert_allclose(lik._dlog_cdf(z), ref, rtol=1e-12, atol=1e-300)
    with np.errstate(all="raise"):
        g = lik.dlog_density_df(np.array([[-1e200], [1e200], [-1e160]]), np.array([[1.0], [1.0], [1.0]]))[:, 0]
        _, slope, _ = lik.log_density_terms(np.array([[-1e200]]), np.array([[1.0]]))
    np.testing.assert_allclose(g, [1e200, 0.0, 1e160], rtol=1e-12)
    assert slope[0, 0] == pytest.approx(1e200, rel=1e-12)


# warped GP --------------------------------------------------------------------------------------

def test_warp_derivative_matches_finite_differences_and_inverse_round_trips():
    lik = CASES["warped_gaussian"]()
    y = np.linspace(-6, 6, 101)
    h = 1e-6
    np.testing.assert_allclose(lik.warp_derivative(y), (lik.warp(y + h) - lik.warp(y - h)) / (2 * h), rtol=1e-8)
    assert np.all(lik.warp_derivative(y) >= 1.0)
    np.testing.assert_allclose(lik.inverse_warp(lik.warp(y)), y, atol=1e-11)
    z = np.array([[-1e3, -3.0], [0.0, 2.5e2]])  # any shape, far tails included
    np.testing.assert_allclose(lik.warp(lik.inverse_warp(z)), z, rtol=1e-13, atol=1e-11)
    sharp = WarpedGaussian(a=(5.0, 0.1, 3.0), b=(40.0, 0.1, 25.0), c=(0.0, 1.0, -2.0))
    np.testing.assert_allclose(sharp.warp(sharp.inverse_warp(np.linspace(-20, 20, 401))),
                               np.linspace(-20, 20, 401), atol=1e-10)
    z = 3 * np.random.default_rng(11).standard_normal(20_000)  # Newton alone oscillates on these steps
    np.testing.assert_allclose(sharp.warp(sharp.inverse_warp(z)), z, atol=1e-10)


def test_warped_conditional_moments_match_direct_integration():
    lik = CASES["warped_gaussian"]()
    for f in (-2.0, 0.0, 0.7, 3.0):
        def moment(k):
            def integrand(y):
                return y ** k * math.exp(lik.log_density([[f]], [[y]])[0])

            return sum(integrate.quad(integrand, lo, hi, epsabs=1e-13, epsrel=1e-12, limit=200)[0]
                       for lo, hi in ((-np.inf, 0.0), (0.0, np.inf)))

        m1, m2 = moment(1), moment(2)
        assert abs(lik.conditional_mean([[f]])[0] - m1) < 1e-7
        assert abs(lik.conditional_variance([[f]])[0] - (m2 - m1 * m1)) < 1e-7


def test_warped_gaussian_reduces_to_gaussian_when_the_warp_vanishes():
    flat = WarpedGaussian(variance=0.4, a=(1e-6,) * 3)
    F, Y = data(Gaussian(0.4))
    np.testing.assert_allclose(flat.log_density(F, Y), Gaussian(0.4).log_density(F, Y), atol=1e-5)
    np.testing.assert_allclose(flat.conditional_mean(F), F[:, 0], atol=1e-5)


# quadrature --------------------------------------------------------------------------------------

def test_gauss_hermite_integrates_standard_normal_moments():
    x, w = gauss_hermite(20)
    assert x.shape == w.shape == (20,) and abs(w.sum() - 1) < 1e-15
    for k, moment in ((1, 0.0), (2, 1.0), (4, 3.0), (6, 15.0)):
        assert abs(w @ x ** k - moment) < 1e-10
    with pytest.raises(ValueError, match="integer between 1 and 200"):
        gauss_hermite(0)


def moments(lik, N=7, seed=4):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(N, lik.n_latent)), rng.uniform(0.1, 1.5, size=(N, lik.n_latent))


def test_expected_log_density_matches_the_gaussian_closed_form():
    lik = Gaussian(variance=0.6)
    mean, var = moments(lik)
    Y = np.random.default_rng(5).normal(size=(7, 1))
    quad, exact = expected_log_density(lik, mean, var, Y), lik.expected_log_density_exact(mean, var, Y)
    for a, b in zip(quad[:3], exact[:3]):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-10)
    np.testing.assert_allclose(quad.dparams["variance"], exact.dparams["variance"], rtol=0, atol=1e-10)


@pytest.mark.parametrize("name", ["bernoulli_logit", "bernoulli_probit", "poisson"])
def test_expected_log_density_matches_monte_carlo(name):
    lik = CASES[name]()
    mean, var = moments(lik)
    Y = lik.sample(mean, np.random.default_rng(6))
    S = 200_000
    F = mean + np.sqrt(var) * np.random.default_rng(7).standard_normal((S,) + mean.shape)
    lp = lik.log_density(F, Y)
    se = lp.std(0) / math.sqrt(S)
    value = expected_log_density(lik, mean, var, Y).value
    assert np.all(np.abs(value - lp.mean(0)) < 5 * se + 1e-12), (value, lp.mean(0), se)


@pytest.mark.parametrize("name", CASES)
def test_expected_log_density_derivatives_match_finite_differences(name):
    lik = CASES[name]()
    mean, var = moments(lik, N=4)
    Y = lik.sample(mean, np.random.default_rng(8))
    out = expected_log_density(lik, mean, var, Y, n_points=12)
    assert out.value.shape == (4,) and out.dmean.shape == out.dvar.shape == mean.shape
    h = 1e-6

    def value(m=mean, v=var, model=lik):
        return expected_log_density(model, m, v, Y, n_points=12).value

    for q in range(lik.n_latent):
        e = np.zeros(lik.n_latent)
        e[q] = h
        fd_mean = (value(m=mean + e) - value(m=mean - e)) / (2 * h)
        fd_var = (value(v=var + e) - value(v=var - e)) / (2 * h)
        np.testing.assert_allclose(out.dmean[:, q], fd_mean, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(out.dvar[:, q], fd_var, rtol=1e-6, atol=1e-7)
    for pname, p in lik.parameters.items():
        p = np.atleast_1d(np.asarray(p, dtype=float))
        g = out.dparams[pname].reshape(4, -1)
        for i in range(p.size):
            up, down = p.copy(), p.copy()
            up[i] += h
            down[i] -= h
            shape = np.shape(lik.parameters[pname])
            fd = (value(model=lik.copy().set_parameters(**{pname: up.reshape(shape)}))
                  - value(model=lik.copy().set_parameters(**{pname: down.reshape(shape)}))) / (2 * h)
            np.testing.assert_allclose(g[:, i], fd, rtol=1e-6, atol=1e-7, err_msg=f"{pname}[{i}]")


def test_expected_log_density_refuses_large_q_and_bad_moments():
    with pytest.raises(ValueError, match="Monte Carlo"):
        expected_log_density(Softmax(5), np.zeros((2, 5)), np.ones((2, 5)), [[0], [4]])
    lik = Gaussian()
    with pytest.raises(ValueError, match="var must be positive"):
        expected_log_density(lik, np.zeros((2, 1)), np.array([[1.0], [0.0]]), [[0], [1]])
    with pytest.raises(ValueError, match=r"shape \(N=2, Q=1\)"):
        expected_log_density(lik, np.zeros((3, 1)), np.ones((3, 1)), [[0], [1]])
    with pytest.raises(ValueError, match="NaN"):
        lik.expected_log_density_exact(np.array([[np.nan], [0.0]]), np.ones((2, 1)), [[0], [1]])
    with pytest.raises(ValueError, match="PointwiseLikelihood"):
        expected_log_density("gaussian", np.zeros((2, 1)), np.ones((2, 1)), [[0], [1]])


# validation ---------------------------------------------------------------------------------------

def test_bernoulli_accepts_both_label_conventions_and_refuses_others():
    lik = BernoulliLogit()
    np.testing.assert_array_equal(lik.validate([-1, 1, 1, -1]), [[0], [1], [1], [0]])
    np.testing.assert_array_equal(lik.validate([[0], [1]]), [[0], [1]])
    F = np.array([[0.3], [-1.2]])
    np.testing.assert_array_equal(lik.log_density(F, [[-1], [1]]), lik.log_density(F, [[0], [1]]))
    with pytest.raises(ValueError, match=r"\{0, 1\} or \{-1, \+1\}; got the value\(s\) 2"):
        BernoulliProbit().validate([0, 2, 0])
    with pytest.raises(ValueError, match="-1, 0 and 1 together"):
        lik.validate([-1, 0, 1])


@pytest.mark.parametrize("lik, Y, message", [
    (Softmax(3), [0, 3, 1], r"labels in 0\.\.2; got the value\(s\) 3"),
    (Softmax(3), [0, -1], r"got the value\(s\) -1"),
    (Softmax(3), [0, 1.5], "integer class labels"),
    (Poisson(), [0, -2, 3], r"non-negative counts; got the value\(s\) -2"),
    (Poisson(), [0, 1.5, 3], r"integer counts; got the value\(s\) 1\.5"),
    (Gaussian(), [0.0, np.nan], "1 NaN or infinite value"),
    (Poisson(), [0.0, np.inf], "NaN or infinite"),
    (Gaussian(), np.zeros((3, 2)), r"shape \(N, 1\) or \(N,\); got shape \(3, 2\)"),
    (Gaussian(), np.zeros((0, 1)), "empty"),
    (Gaussian(), ["a", "b"], "numeric"),
])
def test_bad_observations_are_refused(lik, Y, message):
    with pytest.raises(ValueError, match=message):
        lik.validate(Y)
    with pytest.raises(ValueError, match=message):
        lik.log_density(np.zeros((np.shape(Y)[0], lik.n_latent)), Y)


def test_bad_latent_values_and_parameters_are_refused():
    lik = Gaussian()
    with pytest.raises(ValueError, match=r"shape \(\.\.\., N=2, Q=1\); got shape \(3, 1\)"):
        lik.log_density(np.zeros((3, 1)), [[0], [1]])
    with pytest.raises(ValueError, match=r"Q=3"):
        Softmax(3).dlog_density_df(np.zeros((2, 2)), [[0], [1]])
    with pytest.raises(ValueError, match="NaN or inf"):
        lik.log_density(np.array([[np.nan], [0.0]]), [[0], [1]])
    for bad in (0.0, -1.0, np.inf):
        with pytest.raises(ValueError, match="must be (positive|finite)"):
            Gaussian(variance=bad)
    with pytest.raises(ValueError, match="'a' .* must be positive"):
        WarpedGaussian(a=(1.0, -1.0, 1.0))
    with pytest.raises(ValueError, match="3 entries"):
        WarpedGaussian(c=(1.0, 2.0))
    with pytest.raises(ValueError, match="did you mean 'variance'"):
        lik.set_parameters(varience=2.0)
    with pytest.raises(ValueError, match="no parameter 'variance'"):
        Poisson().set_parameters(variance=1.0)
    with pytest.raises(ValueError, match="binsize must be a positive"):
        Poisson(binsize=0.0)
    with pytest.raises(ValueError, match="n_classes between 2 and 1000"):
        Softmax(1)


def test_parameters_specs_set_parameters_and_copy():
    w = WarpedGaussian()
    specs = w.parameter_specs
    assert set(specs) == {"variance", "a", "b", "c"} and all(isinstance(s, Parameter) for s in specs.values())
    assert specs["a"].is_log and specs["b"].is_log and specs["variance"].is_log and not specs["c"].is_log
    assert Poisson().parameter_specs == {} and BernoulliLogit().parameters == {} and Softmax(4).parameter_specs == {}
    assert Poisson().dlog_density_dparams(np.zeros((1, 1)), [[2]]) == {}
    other = w.copy().set_parameters(a=0.5, variance=2.0)
    np.testing.assert_array_equal(other.parameters["a"], [0.5, 0.5, 0.5])
    assert other.parameters["variance"] == 2.0 and w.parameters["variance"] == 1.0  # copy is independent
    before = w.parameters
    with pytest.raises(ValueError):
        w.set_parameters(variance=3.0, b=-1.0)  # nothing assigned when one value is bad
    assert w.parameters["variance"] == before["variance"]
    w.set_bounds(variance=(1e-3, 10.0))
    assert (w.parameter_specs["variance"].lower, w.parameter_specs["variance"].upper) == (1e-3, 10.0)
    assert "WarpedGaussian(variance=1" in repr(w)


def test_poisson_rate_is_the_lgcp_intensity():
    offset = math.log(191 / 811)
    lik = Poisson(offset=offset, binsize=2.0)
    F = np.array([[0.0], [1.0]])
    np.testing.assert_allclose(lik.conditional_mean(F), 2.0 * np.exp(F[:, 0] + offset))
    np.testing.assert_allclose(lik.log_density(F, [[0], [3]]),
                               [-2.0 * 191 / 811, 3 * math.log(2 * math.e * 191 / 811) - 2 * math.e * 191 / 811
                                - math.log(6)])


# registry ----------------------------------------------------------------------------------------

def test_registry_names_and_get_likelihood():
    assert list(LIKELIHOODS) == ["gaussian", "bernoulli_logit", "bernoulli_probit", "poisson", "softmax",
                                 "warped_gaussian", "robust_max", "binomial"]
    for name, cls in LIKELIHOODS.items():
        lik = get_likelihood(name.upper())
        assert type(lik) is cls and lik.name == name and issubclass(cls, PointwiseLikelihood)
        assert lik.n_latent == (3 if name in ("softmax", "robust_max") else 1)
    assert get_likelihood("softmax", n_classes=10).n_latent == 10
    assert get_likelihood("lgcp", offset=-1.0).offset == -1.0
    inst = Gaussian()
    assert get_likelihood(inst) is inst
    with pytest.raises(ValueError, match="did you mean 'gaussian'.*Registered: gaussian, bernoulli_logit"):
        get_likelihood("gausian")
    with pytest.raises(ValueError, match="does not accept the options \\['n_classes'\\]"):
        get_likelihood("poisson", n_classes=3)
    with pytest.raises(ValueError, match="existing likelihood instance"):
        get_likelihood(inst, variance=2.0)
    with pytest.raises(ValueError, match="name or a PointwiseLikelihood"):
        get_likelihood(3)


def test_binomial_against_scipy_and_its_refusals():
    from scipy import stats
    lik = Binomial(trials=9)
    F = np.array([[-1.2], [0.3], [2.0]])
    y = np.array([[0.0], [4.0], [9.0]])
    assert np.allclose(lik.log_density(F, y), stats.binom(9, special.expit(F[:, 0])).logpmf(y[:, 0]))
    with pytest.raises(ValueError, match="0..9"):
        lik.validate([[10.0]])
    with pytest.raises(ValueError, match="trials"):
        Binomial(trials=0)
    with pytest.raises(ValueError, match="trials"):
        Binomial(trials=2.5)
