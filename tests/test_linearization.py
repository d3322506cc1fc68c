"""Taylor and unscented linearisation (EKS eq. 21-34) against references, exact cases and Monte Carlo."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpexplorer.likelihoods.forward_models import ForwardModel, get_forward_model
from gpexplorer.linearized.linearization import (
    MIN_RELATIVE_STD, Linearization, linearize, sigma_point_weights, taylor, unscented,
)


# ----------------------------------------------------------------------------------------------
# plain-numpy reference: EKS eq. 26-34 transcribed literally, one point at a time
# ----------------------------------------------------------------------------------------------
def reference_unscented(model, mu, E, kappa):
    """Sigma points with the Cholesky root, weights eq. 30, y-bar eq. 33, Gamma eq. 34, A eq. 32."""
    N, Q = mu.shape
    A, b, y_bar = [], [], []
    for n in range(N):
        cov = np.diag(E[n]) if E.ndim == 2 else E[n]
        root = np.linalg.cholesky((Q + kappa) * cov)
        points = [mu[n]] + [mu[n] + root[:, i] for i in range(Q)] + [mu[n] - root[:, i] for i in range(Q)]
        u = [kappa / (Q + kappa)] + [1 / (2 * (Q + kappa))] * (2 * Q)
        Y = [model.value(p[None, :])[0] for p in points]
        yb = sum(ui * yi for ui, yi in zip(u, Y))
        gamma = sum(ui * np.outer(yi - yb, p - mu[n]) for ui, yi, p in zip(u, Y, points))
        An = gamma @ np.linalg.inv(cov)
        A.append(An)
        b.append(yb - An @ mu[n])
        y_bar.append(yb)
    return np.array(A), np.array(b), np.array(y_bar)


class Quadratic(ForwardModel):
    """g_p(f) = c_p + M_p f + f^T H_p f: its exact statistical linearisation is known in closed form.

    Stein's lemma, E[(f - mu) g(f)^T] = E E[J(f)]^T, makes the least-squares slope Gamma E^{-1} equal
    the expected Jacobian, which for a quadratic is J(mu); E[g_p] = g_p(mu) + tr(H_p E). The
    symmetric UT integrates every polynomial of degree <= 3 exactly, so it reproduces both.
    """

    name = "quadratic"

    def __init__(self, M, c, H):
        self.M, self.c, self.H = M, c, H
        self.n_outputs, self.n_latent = M.shape

    def _value(self, F):
        return F @ self.M.T + self.c + np.einsum("nq,pqr,nr->np", F, self.H, F)

    def _jacobian(self, F):
        return self.M[None] + np.einsum("pqr,nr->npq", self.H + np.swapaxes(self.H, 1, 2), F)


def random_quadratic(rng, Q, P, curvature=1.0):
    return Quadratic(rng.normal(size=(P, Q)), rng.normal(size=P), curvature * rng.normal(size=(P, Q, Q)))


def random_covariances(rng, N, Q, rank=None):
    rank = Q if rank is None else rank
    B = rng.normal(size=(N, Q, rank)) * 0.5
    return B @ np.swapaxes(B, 1, 2) + (1e-2 * np.eye(Q) if rank == Q else 0.0)


def seismic_means(rng, N, P):
    return np.hstack([np.cumsum(rng.uniform(0.5, 1.5, size=(N, P)), axis=1), rng.uniform(1.5, 3.0, size=(N, P))])


# ----------------------------------------------------------------------------------------------
# weights and Taylor
# ----------------------------------------------------------------------------------------------
def test_sigma_point_weights_eq30():
    for Q, kappa in [(1, 0.5), (3, 2.0), (4, -1.5), (10, 0.0)]:
        w = sigma_point_weights(Q, kappa)
        assert w.shape == (2 * Q + 1,)
        np.testing.assert_allclose(w.sum(), 1.0, rtol=1e-15)
        assert w[0] == pytest.approx(kappa / (Q + kappa)) and np.all(w[1:] == 1 / (2 * (Q + kappa)))
    np.testing.assert_allclose(sigma_point_weights(3, 0.5), 1 / 7)  # kappa = 1/2: uniform
    for bad in [(2, -2.0), (1, np.nan), (0, 0.5), (2, 1e9)]:
        with pytest.raises(ValueError):
            sigma_point_weights(*bad)


def test_taylor_is_exact_for_identity_and_affine_models():
    rng = np.random.default_rng(0)
    mu = rng.normal(size=(12, 1))
    lin = taylor("identity", mu)
    np.testing.assert_array_equal(lin.A, np.ones((12, 1, 1)))
    np.testing.assert_array_equal(lin.b, np.zeros((12, 1)))
    assert lin.method == "taylor" and lin.sigma_points is None
    affine = random_quadratic(rng, 3, 2, curvature=0.0)
    mu3 = rng.normal(size=(7, 3))
    lin = taylor(affine, mu3)
    np.testing.assert_allclose(lin.A, np.broadcast_to(affine.M, (7, 2, 3)), rtol=1e-14)
    np.testing.assert_allclose(lin.b, np.broadcast_to(affine.c, (7, 2)), rtol=1e-12, atol=1e-14)
    # an expression model's numerical slope and intercept for g(f) = 3 f - 2
    lin = taylor("3*f - 2", mu)
    np.testing.assert_allclose(lin.A[:, 0, 0], 3.0, rtol=1e-9)
    np.testing.assert_allclose(lin.b[:, 0], -2.0, rtol=1e-8)


def test_taylor_eq23_for_nonlinear_models():
    rng = np.random.default_rng(1)
    mu = rng.normal(size=(9, 1))
    lin = taylor("sin", mu)
    np.testing.assert_allclose(lin.A[:, 0, 0], np.cos(mu[:, 0]), rtol=1e-15)
    np.testing.assert_allclose(lin.y_mean, np.sin(mu), rtol=1e-15)
    np.testing.assert_allclose(lin.b[:, 0], np.sin(mu[:, 0]) - np.cos(mu[:, 0]) * mu[:, 0], rtol=1e-14)
    np.testing.assert_allclose(lin.predict(mu), np.sin(mu), rtol=1e-14, atol=1e-15)  # exact at the mean
    model = get_forward_model("seismic", n_layers=3)
    F = seismic_means(rng, 5, 3)
    lin = taylor(model, F)
    np.testing.assert_array_equal(lin.A, model.jacobian(F))
    np.testing.assert_allclose(lin.predict(F), model.value(F), rtol=1e-14)


def test_taylor_refuses_non_differentiable_models():
    for spec in ["sign_cubic", "2*sign(f) + f**3", "abs(f)"]:
        with pytest.raises(ValueError, match="linearization='unscented'"):
            taylor(spec, np.zeros((3, 1)))


# ----------------------------------------------------------------------------------------------
# unscented: against the literal reference and exact cases
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kappa", [0.5, 2.0, -0.4])
@pytest.mark.parametrize("spec, full", [("sin", False), ("poly3", False), ("softmax", False), ("softmax", True),
                                        ("seismic", False), ("seismic", True), ("sign_cubic", False)])
def test_unscented_matches_literal_eq26_34(spec, full, kappa):
    rng = np.random.default_rng(2)
    options = {"softmax": {"n_classes": 3}, "seismic": {"n_layers": 2}}.get(spec, {})
    model = get_forward_model(spec, **options)
    Q, N = model.n_latent, 15
    mu = seismic_means(rng, N, 2) if spec == "seismic" else rng.normal(size=(N, Q))
    scale = 0.05 if spec == "seismic" else 0.5
    E = scale * random_covariances(rng, N, Q) if full else rng.uniform(0.05, 1.0, size=(N, Q)) * scale
    lin = unscented(model, mu, E, kappa=kappa)
    A, b, y_bar = reference_unscented(model, mu, E, kappa)
    np.testing.assert_allclose(lin.A, A, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(lin.b, b, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(lin.y_mean, y_bar, rtol=1e-12, atol=1e-14)
    assert lin.sigma_points.shape == (N, 2 * Q + 1, Q) and lin.sigma_values.shape == (N, 2 * Q + 1, model.n_outputs)
    np.testing.assert_allclose(lin.sigma_values, model.value(lin.sigma_points.reshape(-1, Q)).reshape(N, 2 * Q + 1, -1))
    np.testing.assert_array_equal(lin.weights, sigma_point_weights(Q, kappa))
    assert lin.method == "unscented"


def test_diagonal_and_full_forms_agree():
    rng = np.random.default_rng(3)
    model = get_forward_model("softmax", n_classes=4)
    mu, var = rng.normal(size=(10, 4)), rng.uniform(0.1, 1.0, size=(10, 4))
    full = np.einsum("nq,qr->nqr", var, np.eye(4))
    a, b = unscented(model, mu, var), unscented(model, mu, full)
    for name in ["A", "b", "y_mean", "sigma_points", "sigma_values"]:
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=1e-13, atol=1e-15)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2 ** 31), Q=st.integers(1, 4), P=st.integers(1, 3), kappa_offset=st.floats(0.05, 6.0),
       form=st.sampled_from(["diagonal", "full", "singular", "zero"]))
def test_unscented_recovers_an_affine_model_exactly_for_any_kappa(seed, Q, P, kappa_offset, form):
    rng = np.random.default_rng(seed)
    affine = random_quadratic(rng, Q, P, curvature=0.0)
    kappa = kappa_offset - Q + 0.0  # anything with Q + kappa > 0, including negative kappa
    N = 6
    mu = rng.normal(size=(N, Q)) * 3
    E = {"diagonal": rng.uniform(0, 4, size=(N, Q)), "full": random_covariances(rng, N, Q),
         "singular": random_covariances(rng, N, Q, rank=max(Q - 1, 0)), "zero": np.zeros((N, Q))}[form]
    lin = unscented(affine, mu, E, kappa=kappa)
    np.testing.assert_allclose(lin.A, np.broadcast_to(affine.M, (N, P, Q)), rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(lin.b, np.broadcast_to(affine.c, (N, P)), rtol=1e-7, atol=1e-7)


@pytest.mark.parametrize("form", ["diagonal", "full", "singular"])
@pytest.mark.parametrize("kappa", [0.5, 3.0, -1.0])
def test_unscented_is_exact_for_quadratic_models_stein(form, kappa):
    """Slope = E[J(f)] = J(mu), y-bar = g(mu) + tr(H_p E): exact for any kappa and covariance."""
    rng = np.random.default_rng(4)
    Q, P, N = 3, 2, 8
    model = random_quadratic(rng, Q, P)
    mu = rng.normal(size=(N, Q))
    E = {"diagonal": np.einsum("nq,qr->nqr", rng.uniform(0.1, 2, size=(N, Q)), np.eye(Q)),
         "full": random_covariances(rng, N, Q), "singular": random_covariances(rng, N, Q, rank=1)}[form]
    lin = unscented(model, mu, E, kappa=kappa)
    np.testing.assert_allclose(lin.A, model.jacobian(mu), rtol=1e-10, atol=1e-11)
    np.testing.assert_allclose(lin.y_mean, model.value(mu) + np.einsum("pqr,nrq->np", model.H, E), rtol=1e-11)


# ----------------------------------------------------------------------------------------------
# unscented against quadrature and Monte Carlo
# ----------------------------------------------------------------------------------------------
def gauss_hermite_moments(g, m, v, order):
    """E[g(f)] and E[(g(f) - E g)(f - m)] for f ~ N(m, v) by probabilists' Gauss-Hermite."""
    x, w = np.polynomial.hermite_e.hermegauss(order)
    w = w / w.sum()
    f = m + np.sqrt(v) * x
    gf = g(f)
    mean = w @ gf
    return mean, w @ ((gf - mean) * (f - m))


CASES = [("sin", 0.3, 0.25), ("sin", -1.2, 0.6), ("exp", 0.2, 0.2), ("exp", -0.5, 0.5), ("poly3", 0.4, 0.3),
         ("poly3", -1.0, 1.0)]


def test_unscented_with_kappa2_is_three_point_gauss_hermite():
    """For Q = 1, kappa = 2 puts sigma points at m +/- sqrt(3 v) with weights 2/3, 1/6, 1/6."""
    for spec, m, v in CASES:
        g = get_forward_model(spec).value
        lin = unscented(spec, np.array([[m]]), np.array([[v]]), kappa=2.0)
        y_bar, gamma = gauss_hermite_moments(g, m, v, 3)
        np.testing.assert_allclose(lin.y_mean[0, 0], y_bar, rtol=1e-13)
        np.testing.assert_allclose(lin.A[0, 0, 0] * v, gamma, rtol=1e-12)  # Gamma = A E (eq. 32)


@pytest.mark.parametrize("spec, m, v", CASES)
def test_unscented_moments_agree_with_monte_carlo(spec, m, v):
    """|UT - MC| <= 4 standard errors of the MC estimate + the UT's own quadrature error.

    The UT error is that of the 3-point Gauss-Hermite rule, estimated against a 60-point rule
    (zero for poly3, whose integrands have degree <= 4 < 6).
    """
    rng = np.random.default_rng(5)
    model = get_forward_model(spec)
    lin = unscented(model, np.array([[m]]), np.array([[v]]), kappa=2.0)
    f = m + np.sqrt(v) * rng.standard_normal(10 ** 6)
    g = model.value(f)
    mc_mean = g.mean()
    product = (g - mc_mean) * (f - m)
    mc_gamma = product.mean()
    se_mean, se_gamma = g.std() / 1e3, product.std() / 1e3
    accurate = gauss_hermite_moments(model.value, m, v, 60)
    ut_error = np.abs(np.subtract(gauss_hermite_moments(model.value, m, v, 3), accurate))
    assert abs(lin.y_mean[0, 0] - mc_mean) <= 4 * se_mean + ut_error[0]
    assert abs(lin.A[0, 0, 0] * v - mc_gamma) <= 4 * se_gamma + ut_error[1]
    # the UT's error is much smaller than the moments themselves: the tolerance is not vacuous
    assert ut_error[1] < 0.05 * abs(accurate[1])


def test_unscented_multioutput_agrees_with_monte_carlo():
    """Softmax, Q = 3, diagonal E with kappa = 0 (u_0 = 0, the 4th marginal moments matched)."""
    rng = np.random.default_rng(6)
    model = get_forward_model("softmax", n_classes=3)
    mu, var = np.array([[0.4, -0.3, 0.1]]), np.array([[0.04, 0.09, 0.02]])
    lin = unscented(model, mu, var, kappa=0.0)
    F = mu + np.sqrt(var) * rng.standard_normal((10 ** 6, 3))
    G = model.value(F)
    mc_mean = G.mean(axis=0)
    product = (G - mc_mean)[:, :, None] * (F - mu)[:, None, :]
    mc_gamma = product.mean(axis=0)
    gamma = lin.A[0] * var[0][None, :]  # Gamma = A E
    # UT error O(var^2 |g''''|) << 1e-3 here; 4 standard errors of the MC estimates on top
    np.testing.assert_array_less(np.abs(lin.y_mean[0] - mc_mean), 4 * G.std(axis=0) / 1e3 + 1e-3)
    np.testing.assert_array_less(np.abs(gamma - mc_gamma), 4 * product.std(axis=0) / 1e3 + 1e-4)
    assert np.abs(mc_gamma).max() > 10 * (4 * product.std(axis=0).max() / 1e3 + 1e-4)


# ----------------------------------------------------------------------------------------------
# zero-variance guard
# ----------------------------------------------------------------------------------------------
def test_zero_variance_falls_back_to_the_taylor_slope():
    rng = np.random.default_rng(7)
    mu = rng.normal(size=(6, 1))
    lin = unscented("sin", mu, np.zeros((6, 1)))
    np.testing.assert_array_equal(lin.A[:, 0, 0], np.cos(mu[:, 0]))
    np.testing.assert_allclose(lin.y_mean, np.sin(mu), rtol=1e-15)
    np.testing.assert_array_equal(lin.sigma_points, np.repeat(mu[:, None, :], 3, axis=1))
    # continuity: just above the floor the UT slope is already the Taylor slope to ~1e-9
    tiny = (10 * MIN_RELATIVE_STD) ** 2 * np.ones((6, 1))
    np.testing.assert_allclose(unscented("sin", mu, tiny).A, lin.A, rtol=0, atol=1e-8)


def test_rounding_noise_below_zero_counts_as_zero_variance():
    mu = np.array([[0.3], [-0.7]])
    noisy = unscented("sin", mu, np.array([[-1e-17], [-3e-12]]))
    np.testing.assert_array_equal(noisy.A, unscented("sin", mu, np.zeros((2, 1))).A)
    with pytest.raises(ValueError, match="non-negative"):
        unscented("sin", mu, np.array([[0.1], [-1e-6]]))


def test_zero_variance_in_one_column_only():
    rng = np.random.default_rng(8)
    model = get_forward_model("seismic", n_layers=2)
    mu = seismic_means(rng, 5, 2)
    var = rng.uniform(0.001, 0.01, size=(5, 4))
    var[:, 2] = 0.0
    lin = unscented(model, mu, var, kappa=1.0)
    np.testing.assert_array_equal(lin.A[:, :, 2], model.jacobian(mu)[:, :, 2])
    # the other columns are the UT secants through the sigma points along their axes
    s = np.sqrt(4 + 1.0)
    for q in [0, 1, 3]:
        half_width = s * np.sqrt(var[:, [q]])
        up, down = mu + half_width * np.eye(4)[q], mu - half_width * np.eye(4)[q]
        secant = (model.value(up) - model.value(down)) / (2 * half_width)
        np.testing.assert_allclose(lin.A[:, :, q], secant, rtol=1e-12)


def test_zero_variance_non_differentiable_uses_the_floor_secant():
    mu = np.array([[0.0], [1.0], [-2.0]])
    zero = unscented("sign_cubic", mu, np.zeros((3, 1)), kappa=0.5)
    floor = (MIN_RELATIVE_STD * np.maximum(1.0, np.abs(mu))) ** 2
    at_floor = unscented("sign_cubic", mu, floor * (1 + 1e-9), kappa=0.5)
    np.testing.assert_allclose(zero.A, at_floor.A, rtol=1e-6)
    np.testing.assert_allclose(zero.A[1:, 0, 0], 3 * mu[1:, 0] ** 2, rtol=1e-6)  # smooth away from the jump
    assert zero.A[0, 0, 0] > 1e6  # the secant across the jump is steep, but finite
    assert np.all(np.isfinite(zero.b))


def test_full_covariance_with_a_zero_eigen_direction():
    rng = np.random.default_rng(9)
    model = get_forward_model("softmax", n_classes=3)
    mu = rng.normal(size=(4, 3))
    E = random_covariances(rng, 4, 3, rank=2)
    lin = unscented(model, mu, E)
    assert np.all(np.isfinite(lin.A))
    # along the null direction the slope is the Jacobian's directional derivative
    lam, V = np.linalg.eigh(E)
    null = V[:, :, 0]
    np.testing.assert_allclose(np.einsum("npq,nq->np", lin.A, null),
                               np.einsum("npq,nq->np", model.jacobian(mu), null), rtol=1e-10, atol=1e-12)
    # along the spread directions it is the secant through the sigma points
    s = np.sqrt(3 + 0.5)
    for j in (1, 2):
        d = V[:, :, j] * np.sqrt(lam[:, j])[:, None]
        secant = (model.value(mu + s * d) - model.value(mu - s * d)) / (2 * s)
        np.testing.assert_allclose(np.einsum("npq,nq->np", lin.A, d), secant, rtol=1e-9, atol=1e-12)


def test_nearly_singular_full_covariance_takes_the_eigen_route():
    """lambda_min = 1e-14 lambda_max: Cholesky may succeed, but the pivot test reroutes the point."""
    rng = np.random.default_rng(10)
    Q, N = 3, 5
    model = random_quadratic(rng, Q, 2)
    mu = rng.normal(size=(N, Q))
    V = np.linalg.qr(rng.normal(size=(Q, Q)))[0]
    E = np.tile(V @ np.diag([1e-14, 0.3, 1.0]) @ V.T, (N, 1, 1))
    lin = unscented(model, mu, E, kappa=0.5)
    np.testing.assert_allclose(lin.A, model.jacobian(mu), rtol=1e-8, atol=1e-9)  # Stein, as above
    offsets = lin.sigma_points[:, 1:Q + 1] - mu[:, None, :]
    gram = offsets @ np.swapaxes(offsets, 1, 2)
    # eigen-directions are mutually orthogonal (Cholesky columns of this E would not be)
    np.testing.assert_allclose(gram, np.einsum("nj,jk->njk", np.diagonal(gram, axis1=1, axis2=2), np.eye(Q)),
                               atol=1e-12)
    L = np.linalg.cholesky(E[0] + 1e-12 * np.eye(Q))
    assert np.abs(np.triu(L.T @ L, 1)).max() > 1e-3


# ----------------------------------------------------------------------------------------------
# errors and dispatch
# ----------------------------------------------------------------------------------------------
def test_bad_inputs_raise_clear_errors():
    mu = np.zeros((3, 2))
    model = get_forward_model("softmax", n_classes=2)
    cases = [
        (lambda: unscented(model, np.zeros((3, 3)), np.ones((3, 3))), r"shape \(N, 2\)"),
        (lambda: unscented(model, mu, np.ones((3, 3))), "cov must hold"),
        (lambda: unscented(model, mu, -np.ones((3, 2))), "non-negative"),
        (lambda: unscented(model, mu, np.full((3, 2), np.nan)), "cov contains NaN"),
        (lambda: unscented(model, np.full((3, 2), np.inf), np.ones((3, 2))), "mean contains NaN"),
        (lambda: unscented(model, mu, np.tile([[1.0, 0.5], [0.0, 1.0]], (3, 1, 1))), "symmetric"),
        (lambda: unscented(model, mu, np.tile([[1.0, 2.0], [2.0, 1.0]], (3, 1, 1))), "semi-definite"),
        (lambda: unscented(model, mu, np.ones((3, 2)), kappa=-2.5), "Q \\+ kappa > 0"),
        (lambda: taylor("exp", np.array([[1000.0]])), "NaN or inf"),
        (lambda: unscented("exp", np.array([[0.0]]), np.array([[1e6]])), "sigma points"),
        (lambda: linearize("sin", np.zeros((2, 1)), method="unscented"), "needs the latent covariance"),
        (lambda: linearize("sin", np.zeros((2, 1)), method="laplace"), "unknown linearisation"),
        (lambda: taylor("nonsense_model", np.zeros((2, 1))), "unknown forward model"),
    ]
    for call, message in cases:
        with pytest.raises(ValueError, match=message):
            call()


def test_linearize_dispatch_and_one_dimensional_inputs():
    mu, var = np.array([0.1, -0.4]), np.array([0.2, 0.3])
    a = linearize("tanh2", mu, var, method="ugp", kappa=1.0)
    b = unscented("tanh2", mu[:, None], var[:, None], kappa=1.0)
    np.testing.assert_array_equal(a.A, b.A)
    np.testing.assert_array_equal(linearize("tanh2", mu, method="egp").A, taylor("tanh2", mu[:, None]).A)
    assert isinstance(a, Linearization)
    with pytest.raises(ValueError, match=r"must have shape \(2, 1\)"):
        a.predict(np.zeros((2, 2)))
