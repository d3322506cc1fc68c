"""Hyperparameter learning of the EGP / UGP (gpexplorer.linearized.learning): the linearised
model's evidence and its gradient against the literal numpy reference and finite differences, the
total derivative of the free energy (EGP paper eq. 41), the Fisher information, the Fisher-scoring
search on synthetic objectives, and the learnt free energy against scipy's COBYLA and exact GP
regression."""

import math
from types import SimpleNamespace

import numpy as np
import pytest

import reference_linearized as ref
from gpexplorer import kernels
from gpexplorer.linearized import learning as ll
from gpexplorer.likelihoods.forward_models import get_forward_model
from gpexplorer.linearized.gauss_newton import cholesky_W
from gpexplorer.linearized.gp import LinearizedGP
from gpexplorer.experiments.linearized_papers import PAPER_BOUNDS, cv_folds
from gpexplorer.datasets import toy_inversion
from gpexplorer.models import ExactGPR
from gpexplorer.optimize import Packer
from gpexplorer.parameters import Parameter


def problem(forward, n=30, seed=3, dims=1):
    """f ~ GP(0, Matern 5/2) at n random inputs in [-3, 3]^dims, y = g(f) + N(0, 0.2^2)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3.0, 3.0, (n, dims))
    K = kernels.Matern52(variance=0.64, lengthscale=0.8).K(X) + 1e-10 * np.eye(n)
    f = np.linalg.cholesky(K) @ rng.standard_normal(n)
    y = get_forward_model(forward).value(f[:, None])[:, 0] + 0.2 * rng.standard_normal(n)
    return X, y


def central_difference(fun, x, h):
    return np.array([(fun(x + h * e) - fun(x - h * e)) / (2 * h) for e in np.eye(len(x))])


KERNELS = {
    "matern52": lambda: kernels.Matern52(variance=0.7, lengthscale=0.9),
    "se-ard": lambda: kernels.SquaredExponential(variance=0.8, lengthscale=[0.9, 1.4]),
    "matern32+periodic": lambda: (kernels.Matern32(variance=0.5, lengthscale=1.1)
                                  + kernels.Periodic(variance=0.3, lengthscale=0.8, period=2.5)),
}


def fixed_linearisation(kernel_name, seed=3):
    """A problem with slopes a (both signs) and intercepts b held fixed, its packer and start."""
    dims = 2 if kernel_name == "se-ard" else 1
    X, y = problem("sin", n=25, seed=seed, dims=dims)
    rng = np.random.default_rng(seed + 1)
    a, b = rng.uniform(-1.5, 1.5, len(y)), rng.normal(0.0, 0.3, len(y))
    kernel = KERNELS[kernel_name]()
    params = {**kernel.parameters, "noise_variance": 0.07}
    packer = Packer({n: Parameter(n) for n in params}, params)
    return X, y, a, b, kernel, packer, packer.pack(params)


def reference_evidence(X, y, a, b, kernel, packer, x):
    values = packer.unpack(x)
    noise = values.pop("noise_variance")
    k = kernel.copy()
    k.set_parameters(**values)
    return ref.linear_gaussian_evidence(k.K(X), y, a, b, noise)


def score_at(X, y, a, b, kernel, packer, x, forward="sin", exact_implicit=False, mean=None):
    """FisherScore at log-parameters x for a posterior whose linearisation is (a, b)."""
    values = packer.unpack(x)
    noise = values.pop("noise_variance")
    k = kernel.copy()
    k.set_parameters(**values)
    K = k.K(X)
    s = a / math.sqrt(noise)
    post = SimpleNamespace(s=s, chol_W=cholesky_W(K, s), mean=mean,
                           linearization=SimpleNamespace(b=b[:, None]))
    score = ll.FisherScore(k, X, y, get_forward_model(forward), packer, {}, exact_implicit)
    return score(x, K, post)


# ------------------------------------------------------------------------------------------
# the linearised model: F = E at the inner loop's posterior, gradient, Fisher information
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("linearization", ["taylor", "unscented"])
@pytest.mark.parametrize("forward", ["sin", "poly3", "tanh2"])
def test_free_energy_is_the_linearised_models_evidence_at_the_posterior(forward, linearization):
    """m^T K^-1 m + |y - A m - b|^2 / sigma^2 >= (y - b)^T B^-1 (y - b) with equality at
    m = H (y - b) (eq. 34), and log|K| - log|C| = log|B| - N log sigma^2: F <= E, with equality
    where the inner loop reached its fixed point (the EGP's MAP; F - E is of second order in the
    distance). The UGP's step search can stop short of the fixed point of its linearisation (the
    statistical slopes are not those of eq. 31); there F < E."""
    X, y = problem(forward)
    m = LinearizedGP(X, y, forward=forward, linearization=linearization, kernel=kernels.Matern52(0.7, 0.9),
                     noise_variance=0.05, tol=1e-15, max_iter=500).fit_posterior()
    lin = m.linearization
    a, b = lin.A[:, 0, 0], lin.b[:, 0]
    K = m.kernel.K(X)
    E = ref.linear_gaussian_evidence(K, y, a, b, 0.05)
    assert m.free_energy() <= E + 1e-9 * abs(E)
    if linearization == "taylor":
        assert m.free_energy() == pytest.approx(E, rel=1e-8, abs=1e-8)


@pytest.mark.parametrize("kernel_name", sorted(KERNELS))
def test_fixed_linearisation_gradient_matches_finite_differences(kernel_name):
    X, y, a, b, kernel, packer, x = fixed_linearisation(kernel_name)
    gradient, _ = score_at(X, y, a, b, kernel, packer, x)
    numeric = central_difference(lambda z: reference_evidence(X, y, a, b, kernel, packer, z), x, 1e-5)
    np.testing.assert_allclose(gradient, numeric, rtol=1e-6, atol=1e-7 * np.abs(numeric).max())
    assert len(gradient) == len(x) and np.abs(gradient).min() > 1e-4  # every coordinate is exercised


@pytest.mark.parametrize("kernel_name", sorted(KERNELS))
def test_fisher_information_matches_the_reference(kernel_name):
    X, y, a, b, kernel, packer, x = fixed_linearisation(kernel_name)
    fisher = score_at(X, y, a, b, kernel, packer, x)[1]()

    def covariance(z):
        values = packer.unpack(z)
        noise = values.pop("noise_variance")
        k = kernel.copy()
        k.set_parameters(**values)
        return noise * np.eye(len(y)) + np.diag(a) @ k.K(X) @ np.diag(a)

    expected = ref.fisher_information(covariance, x)
    np.testing.assert_allclose(fisher, expected, rtol=1e-6, atol=1e-8 * np.abs(expected).max())
    np.testing.assert_array_equal(fisher, fisher.T)
    assert np.linalg.eigvalsh(fisher).min() > -1e-8 * np.abs(fisher).max()


@pytest.mark.parametrize("forward, rtol", [("sin", 1e-4), ("poly3", 1e-4), ("exp", 1e-4), ("tanh2", 2e-3)])
def test_egp_gradient_is_the_total_derivative_of_the_free_energy(forward, rtol):
    """The implicit term (a = g'(m) moves with the MAP m) included: finite differences of eq. 41
    with the inner loop re-run at every point. tanh(2f) saturates, so its inner loop converges
    slowly and the finite differences are noisier."""
    X, y = problem(forward)
    base = dict(forward=forward, kernel=kernels.Matern52(0.7, 0.9), noise_variance=0.05, tol=1e-15, max_iter=500)
    m = LinearizedGP(X, y, **base).fit_posterior()
    packer = Packer(m.parameter_specs, m.parameters)
    x = packer.pack(m.parameters)
    score = ll.FisherScore(m.kernel, m.X, m.y, m.forward, packer, {}, exact_implicit=True)
    gradient, _ = score(x, m.kernel.K(X), m._posterior())

    def free_energy(z):
        return LinearizedGP(X, y, **base).set_parameters(**packer.unpack(z)).fit_posterior().free_energy()

    numeric = central_difference(free_energy, x, 1e-3)  # the inner loop's tolerance limits smaller steps
    np.testing.assert_allclose(gradient, numeric, rtol=rtol, atol=rtol * np.abs(numeric).max())
    # without the implicit term the gradient is a different one (the term is not negligible)
    fixed, _ = ll.FisherScore(m.kernel, m.X, m.y, m.forward, packer, {}, exact_implicit=False)(
        x, m.kernel.K(X), m._posterior())
    assert np.abs(fixed - numeric).max() > 10 * rtol * np.abs(numeric).max()


def test_identity_forward_model_has_no_implicit_term():
    """g'' = 0: the EGP gradient is the exact GP's log marginal likelihood gradient."""
    X, y = problem("identity", n=40)
    m = LinearizedGP(X, y, forward="identity", kernel=kernels.Matern52(0.7, 0.9), noise_variance=0.05)
    m.fit_posterior()
    packer = Packer(m.parameter_specs, m.parameters)
    gradient, _ = ll.FisherScore(m.kernel, X, y, m.forward, packer, {}, exact_implicit=True)(
        packer.pack(m.parameters), m.kernel.K(X), m._posterior())
    exact = ExactGPR(X, y, kernels.Matern52(0.7, 0.9), noise_variance=0.05)
    _, grads = exact.log_marginal_likelihood(eval_gradient=True)
    np.testing.assert_allclose(gradient, packer.chain(exact.parameters, grads), rtol=1e-8)


# ------------------------------------------------------------------------------------------
# the Fisher-scoring search on synthetic objectives
# ------------------------------------------------------------------------------------------
class Quadratic:
    """-f for f(x) = -1/2 (x - c)^T H (x - c) with the interface fisher_scoring expects; points
    in ``fail`` (a predicate) score FAILED, as an inner-loop failure does."""

    def __init__(self, centre, hessian, fail=lambda x: False):
        self.centre, self.hessian, self.fail = np.asarray(centre, float), np.asarray(hessian, float), fail
        self.best = {"objective": math.inf, "x": None, "K": None, "post": None}
        self.calls = []

    def __call__(self, x):
        self.calls.append(np.array(x))
        d = x - self.centre
        value = ll.FAILED if self.fail(x) else 0.5 * d @ self.hessian @ d
        if value < self.best["objective"]:
            self.best.update(objective=value, x=np.array(x))
        return value

    def score(self, x, K, post):
        return -self.hessian @ (x - self.centre), lambda: self.hessian


def test_fisher_scoring_takes_the_newton_step_of_a_quadratic():
    H = np.array([[2.0, 0.5], [0.5, 1.0]])
    q = Quadratic([0.3, -0.7], H)
    lo, hi = np.full(2, -5.0), np.full(2, 5.0)
    success, message, iterations = ll.fisher_scoring(q, q.score, np.zeros(2), lo, hi, np.array([False, False]))
    assert success and "converged" in message
    np.testing.assert_allclose(q.best["x"], [0.3, -0.7], atol=1e-12)
    assert len(q.calls) == 2 and iterations == 2  # start, one Newton step, then nothing left to gain


def test_fisher_scoring_stops_at_an_active_bound():
    q = Quadratic([0.3, 4.0], np.diag([2.0, 1.0]))
    lo, hi = np.full(2, -1.0), np.full(2, 1.0)
    success, _, _ = ll.fisher_scoring(q, q.score, np.zeros(2), lo, hi, np.array([False, False]), ftol=1e-12)
    assert success
    np.testing.assert_allclose(q.best["x"], [0.3, 1.0], atol=1e-12)
    assert all(np.all((c >= lo) & (c <= hi)) for c in q.calls)


def test_fisher_scoring_shrinks_the_trust_region_and_gives_up_when_nothing_improves():
    q = Quadratic([2.0], np.eye(1), fail=lambda x: x[0] > 0.6)
    success, _, _ = ll.fisher_scoring(q, q.score, np.zeros(1), np.full(1, -5.0), np.full(1, 5.0), np.array([False]))
    assert q.calls[1][0] == 2.0 and q.calls[2][0] == pytest.approx(0.5)  # failed: a quarter of its length
    assert success and 0.59 <= q.best["x"][0] <= 0.6 and all(np.abs(np.diff(np.array(q.calls)[:, 0])) <= 2.0)
    nowhere = Quadratic([2.0], np.eye(1), fail=lambda x: x[0] != 0.0)
    success, message, _ = ll.fisher_scoring(nowhere, nowhere.score, np.zeros(1), np.full(1, -5.0),
                                            np.full(1, 5.0), np.array([False]))
    assert "no step" in message and nowhere.best["x"][0] == 0.0
    np.testing.assert_allclose([c[0] for c in nowhere.calls[1:]], 2.0 * 0.25 ** np.arange(len(nowhere.calls) - 1),
                               rtol=1e-8)
    assert 0.25 * nowhere.calls[-1][0] < 1e-3 <= nowhere.calls[-1][0]
    budget = Quadratic([2.0], np.eye(1), fail=lambda x: x[0] != 0.0)
    success, message, _ = ll.fisher_scoring(budget, budget.score, np.zeros(1), np.full(1, -5.0),
                                            np.full(1, 5.0), np.array([False]), max_evals=3)
    assert not success and "budget of 3 evaluations" in message and len(budget.calls) == 3


def test_trust_region_step_turns_from_the_fisher_step_towards_the_gradient():
    """A nearly singular I: the Fisher-scoring step is huge along the flat direction; the
    damped step has the radius's length and lies between it and the gradient."""
    fisher = np.array([[1.0, 0.0], [0.0, 1e-6]])
    gradient = np.array([1.0, 0.01])
    step, predicted, at_edge = ll._trust_region_step(gradient, fisher, np.array([True, True]), 2.0)
    assert at_edge and np.linalg.norm(step) == pytest.approx(2.0, rel=1e-6)
    mu = gradient[0] / step[0] - 1.0
    np.testing.assert_allclose(step, gradient / (np.diag(fisher) + mu), rtol=1e-9)
    assert predicted == pytest.approx(gradient @ step - 0.5 * step @ fisher @ step)
    inside, _, at_edge = ll._trust_region_step(gradient, np.eye(2), np.array([True, False]), 2.0)
    assert not at_edge and inside.tolist() == [1.0, 0.0]


def test_fisher_scoring_of_a_noise_variance_is_exact_in_one_step():
    """E(u) = -N/2 (u + S exp(-u)), u = log sigma^2: the Fisher step in the natural parameter,
    u -> u + log(1 + p), lands on u* = log S from above, and from below when the trust region
    admits p = S / sigma^2 - 1."""
    N, S = 50, 0.04

    class PureNoise(Quadratic):
        def __call__(self, x):
            self.calls.append(np.array(x))
            value = 0.5 * N * (x[0] + S * math.exp(-x[0]))
            if value < self.best["objective"]:
                self.best.update(objective=value, x=np.array(x))
            return value

        def score(self, x, K, post):
            return np.array([0.5 * N * (S * math.exp(-x[0]) - 1.0)]), lambda: np.array([[0.5 * N]])

    for start, radius in ((math.log(10 * S), 3.0), (math.log(S / 10), 10.0)):
        q = PureNoise([0.0], np.eye(1))
        ll.fisher_scoring(q, q.score, np.array([start]), np.full(1, -20.0), np.full(1, 20.0), np.array([True]),
                          radius=radius)
        assert q.calls[1][0] == pytest.approx(math.log(S), abs=1e-12)
        assert len(q.calls) == 2


# ------------------------------------------------------------------------------------------
# learning: at least COBYLA's free energy, the exact GP's optimum in the identity limit
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("linearization", ["taylor", "unscented"])
@pytest.mark.parametrize("forward", ["sin", "poly3", "exp"])
def test_fisher_scoring_reaches_at_least_cobylas_free_energy(forward, linearization):
    data = toy_inversion(forward, seed=0)
    train = cv_folds()[2][0]
    fits = {}
    for method in ("fisher", "cobyla"):
        m = LinearizedGP(data.X[train], data.y[train], forward=forward, linearization=linearization,
                         kernel=kernels.Matern52(1.0, 1.0), noise_variance=1.0)
        fits[method] = (m.set_bounds(**PAPER_BOUNDS).fit(method=method), m.free_energy())
    result, F = fits["fisher"]
    assert result.success, result.message
    assert F >= fits["cobyla"][1] - 0.01
    assert result.n_eval < fits["cobyla"][0].n_eval
    assert -result.objective == pytest.approx(F, rel=1e-12)


def test_egp_learning_ends_at_a_maximum_of_the_free_energy():
    """A tight Nelder-Mead search started from the Fisher-scoring result finds nothing better."""
    data = toy_inversion("sin", seed=0)
    train = cv_folds()[0][0]
    m = LinearizedGP(data.X[train], data.y[train], forward="sin", kernel=kernels.Matern52(1.0, 1.0),
                     noise_variance=1.0)
    m.set_bounds(**PAPER_BOUNDS).fit()
    F = m.free_energy()
    m.fit(method="nelder-mead", initial_step=0.05, xtol=1e-3, ftol=1e-5, max_iter=150)
    assert m.free_energy() <= F + 0.01


def test_identity_limit_recovers_the_exact_gp_optimum():
    X, y = problem("identity", n=80, seed=5)
    m = LinearizedGP(X, y, forward="identity", kernel=kernels.Matern52(1.0, 1.0), noise_variance=1.0)
    result = m.fit()
    best = ExactGPR(X, y, kernel=kernels.Matern52(1.0, 1.0), noise_variance=1.0)
    best.fit()
    assert m.free_energy() == pytest.approx(best.log_marginal_likelihood(), abs=0.01)
    for name, value in best.parameters.items():
        assert m.parameters[name] == pytest.approx(value, rel=0.05), name
    assert result.success and result.n_eval <= 8


def test_bounds_fixed_parameters_budget_and_callback():
    X, y = problem("sin", n=60, seed=6)

    def model(**kw):
        return LinearizedGP(X, y, forward="sin", kernel=kernels.Matern52(1.0, 1.0), noise_variance=1.0, **kw)

    m = model()
    m.set_bounds(lengthscale=(2.0, 10.0)).fit()  # the free optimum lies below 2
    assert m.kernel.lengthscale == pytest.approx(2.0, rel=1e-12)
    c = model()
    c.set_bounds(lengthscale=(2.0, 10.0)).fit(method="cobyla")
    assert m.free_energy() >= c.free_energy() - 0.01
    fixed = model()
    fixed.fit(fixed=("noise_variance",))
    assert fixed.noise_variance == 1.0 and fixed.kernel.lengthscale != 1.0
    kernel_fixed = model()
    kernel_fixed.fit(fixed="kernel")
    assert kernel_fixed.kernel.parameters == {"variance": 1.0, "lengthscale": 1.0}
    assert kernel_fixed.noise_variance != 1.0
    nothing = model()
    result = nothing.fit(fixed=("kernel", "noise_variance"))
    assert result.success and result.n_eval == 1 and "nothing to optimise" in result.message
    short = model().fit(max_iter=2)
    assert short.n_eval == 2 and not short.success and "budget of 2 evaluations" in short.message
    seen = []
    stopped = model().fit(callback=lambda entry: seen.append(entry) or entry.iteration >= 1)
    assert stopped.n_eval == 2 == len(seen) and "callback" in stopped.message


def test_a_kernel_without_analytic_gradients_is_learnt_too():
    """Fisher scoring needs only K (dK/dtheta by differences): a user kernel with no
    grad_params reaches COBYLA's free energy."""

    class Exponentiated(kernels.Kernel):
        """variance * exp(-|x - x'| / lengthscale), K only."""
        param_names = ("variance", "lengthscale")

        def __init__(self, variance=1.0, lengthscale=1.0):
            self.set_parameters(variance=variance, lengthscale=lengthscale)

        def K(self, X, X2=None):
            X2 = X if X2 is None else X2
            return self.variance * np.exp(-np.abs(X[:, None, 0] - X2[None, :, 0]) / self.lengthscale)

        def Kdiag(self, X):
            return np.full(len(X), self.variance)

    X, y = problem("sin", n=60, seed=7)
    energies = {}
    for method in ("fisher", "cobyla"):
        m = LinearizedGP(X, y, forward="sin", kernel=Exponentiated(1.0, 1.0), noise_variance=1.0)
        result = m.fit(method=method)
        energies[method] = m.free_energy()
    assert result.success
    assert energies["fisher"] >= energies["cobyla"] - 0.01
