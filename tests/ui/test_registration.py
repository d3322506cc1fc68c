"""A kernel, an inducing feature and a likelihood registered from tests/ only appear in every lab
that can use them (issue 25 item 1): each lab offers them in its choices, builds their sliders and
editors from their declared specs, and computes a finite result with them, with no edit under
gpexplorer/ui/. The registrations are undone after each test."""

from __future__ import annotations

import contextlib
import math

import numpy as np
import pytest

from gpexplorer import covariances, inducing, kernels, likelihoods
from gpexplorer.inducing.placement import random_subset
from gpexplorer.kernels.base import as_inputs, reduce_ard
from gpexplorer.likelihoods.pointwise_base import PointwiseLikelihood
from gpexplorer.parameters import Parameter, sum_gradients


class TestRBF(kernels.Kernel):
    """variance * exp(-r2 / 2) in plain numpy, r2 = sum_d (x_d - x'_d)^2 / l_d^2: a stationary
    kernel with a lengthscale, its own slider ranges and a Gaussian spectral density (so random
    Fourier features too). Its covariances with inducing points are the generic (InducingPoints,
    Kernel) ones."""

    __test__ = False
    name, label = "test-rbf", "Test RBF (tests/)"
    param_names = ("variance", "lengthscale")
    ard_params = ("lengthscale",)
    sliders = {"variance": (0.05, 3.0), "lengthscale": (0.1, 2.5)}
    stationary = True
    spectral_smoothness = math.inf

    def __init__(self, variance=1.0, lengthscale=1.0):
        self.set_parameters(variance=variance, lengthscale=lengthscale)

    def _scaled_differences(self, X, X2):
        X = as_inputs(X)
        X2 = X if X2 is None else as_inputs(X2, "X2")
        ls = np.broadcast_to(np.asarray(self.lengthscale, dtype=float), (X.shape[1],))
        return (X[:, None, :] - X2[None, :, :]) / ls, ls  # [N1, N2, D], [D]

    def K(self, X, X2=None):
        d, _ = self._scaled_differences(X, X2)
        return self.variance * np.exp(-0.5 * np.sum(d * d, axis=2))

    def Kdiag(self, X):
        return np.full(as_inputs(X).shape[0], self.variance)

    def grad_params_and_X(self, dL_dK, X, X2=None, K=None):
        d, ls = self._scaled_differences(X, X2)
        G = np.asarray(dL_dK) * self.variance * np.exp(-0.5 * np.sum(d * d, axis=2))  # [N1, N2]
        params = {"variance": float(G.sum()) / self.variance,
                  "lengthscale": reduce_ard(np.einsum("ij,ijd->d", G, d * d) / ls, self.lengthscale)}
        dX = -np.einsum("ij,ijd->id", G, d) / ls
        if X2 is None:  # both arguments move
            dX = dX + np.einsum("ij,ijd->jd", G, d) / ls
        return params, dX

    def grad_params_diag(self, dL_dKdiag, X):
        return {"variance": float(np.sum(dL_dKdiag)), "lengthscale": reduce_ard(np.zeros(1), self.lengthscale)}


class TestRBFBias(TestRBF):
    """TestRBF + bias: a parameter no registered kernel has (the sparse lab grows a slider for it);
    no random Fourier features (the constant's spectrum is a point mass), so the linearised lab,
    whose EKS / UKS need them, does not offer it."""

    __test__ = False
    name, label = "test-rbf-bias", "Test RBF + bias (tests/)"
    param_names = ("variance", "lengthscale", "bias")
    sliders = {**TestRBF.sliders, "bias": (0.01, 2.0)}
    spectral_smoothness = None

    def __init__(self, variance=1.0, lengthscale=1.0, bias=0.1):
        self.set_parameters(variance=variance, lengthscale=lengthscale, bias=bias)

    def K(self, X, X2=None):
        return super().K(X, X2) + self.bias

    def Kdiag(self, X):
        return super().Kdiag(X) + self.bias

    def grad_params_and_X(self, dL_dK, X, X2=None, K=None):
        params, dX = super().grad_params_and_X(dL_dK, X, X2)
        return {**params, "bias": float(np.sum(dL_dK))}, dX

    def grad_params_diag(self, dL_dKdiag, X):
        return {**super().grad_params_diag(dL_dKdiag, X), "bias": float(np.sum(dL_dKdiag))}


class PointPairs(inducing.InducingFeature):
    """u_m = f(z_m - w) + f(z_m + w): two point masses a fixed half-spread w (the editor's width) apart."""

    name, label = "test-pairs", "Point pairs (tests/)"
    param_names = ("Z",)
    editable = ("width",)

    def __init__(self, Z, width=0.2):
        Z = self._checked("Z", Z)
        self.Z = Z[:, None] if Z.ndim == 1 else Z
        self.width = float(width)

    @property
    def parameter_specs(self):
        return {"Z": Parameter.real("Z")}

    @property
    def locations(self):
        return self.Z

    def points(self):
        return np.vstack([self.Z - self.width, self.Z + self.width])  # [2M, D]

    @classmethod
    def from_editor(cls, locations, *, width=1.0, frequency=1.0, count=1):
        return cls(locations, width)

    @classmethod
    def editor_defaults(cls, lengthscale, X, M):
        return {"width": 0.3 * float(np.mean(lengthscale))}

    def with_width(self, member, width):
        return PointPairs(self.Z, width)

    def member_values(self, member):
        return self.width, None

    def restart_from(self, X, rng):
        return {"Z": random_subset(X, len(self.Z), rng)}

    def at_locations(self, locations):
        return PointPairs(np.asarray(locations, dtype=float).reshape(-1, self.input_dim), self.width)

    def concatenate(self, other):
        return PointPairs(np.vstack([self.Z, other.locations]), self.width)


def _fold(P):
    """[2M, ...] -> [M, ...]: the two members' contributions added (S P with S = [I, I])."""
    M = P.shape[0] // 2
    return P[:M] + P[M:]


def pairs_Kuu(feature, kernel):
    Kpp = kernel.K(feature.points())  # [2M, 2M]
    return _fold(_fold(Kpp).T).T  # S Kpp S^T [M, M]


def pairs_Kuf(feature, kernel, X):
    return _fold(kernel.K(feature.points(), X))  # [M, N]


def pairs_gradients(feature, kernel, X, dKuu, dKuf, *, Kuu=None, Kuf=None, rank_one=None):
    if rank_one is not None:
        dKuf = dKuf - np.outer(*rank_one)
    P = feature.points()
    g_uu, dP_uu = kernel.grad_params_and_X(np.block([[dKuu, dKuu], [dKuu, dKuu]]), P, None)
    g_uf, dP_uf = kernel.grad_params_and_X(np.vstack([dKuf, dKuf]), P, X)
    return sum_gradients(g_uu, g_uf), {"Z": _fold(dP_uu + dP_uf)}


class TestLaplace(PointwiseLikelihood):
    """p(y | f) = exp(-|y - f| / b) / (2 b): robust regression, Q = 1."""

    __test__ = False
    name, label, kind = "test-laplace", "Laplace (tests/)", "regression"
    param_layout = {"scale": ("log", 0)}

    def __init__(self, scale=0.5):
        super().__init__()
        self.set_parameters(scale=scale)

    def _log_density(self, F, y):
        b = self._values["scale"]
        return -np.abs(y - F[..., 0]) / b - math.log(2 * b)

    def _dlog_df(self, F, y):
        return (np.sign(y - F[..., 0]) / self._values["scale"])[..., None]

    def _dlog_dparams(self, F, y):
        b = self._values["scale"]
        return {"scale": np.abs(y - F[..., 0]) / b ** 2 - 1.0 / b}

    def _sample(self, F, rng):
        return F[..., 0] + rng.laplace(0.0, self._values["scale"], F.shape[:-1])

    def _mean(self, F):
        return F[..., 0].copy()

    def _variance(self, F):
        return np.full(F.shape[:-1], 2 * self._values["scale"] ** 2)


@contextlib.contextmanager
def registered_pair(feature_type, kernel_type):
    """The pair's covariances registered for the block, then removed."""
    ops = ((covariances.Kuu, pairs_Kuu), (covariances.Kuf, pairs_Kuf), (covariances.gradients, pairs_gradients))
    for op, fn in ops:
        op.register(feature_type, kernel_type)(fn)
    try:
        yield
    finally:
        for op, _ in ops:
            op.unregister(feature_type, kernel_type)


@pytest.fixture
def registered():
    with contextlib.ExitStack() as stack:
        stack.enter_context(kernels.KERNELS.registered(TestRBF))
        stack.enter_context(kernels.KERNELS.registered(TestRBFBias))
        stack.enter_context(inducing.FEATURES.registered(PointPairs))
        stack.enter_context(likelihoods.LIKELIHOODS.registered(TestLaplace))
        stack.enter_context(registered_pair(PointPairs, TestRBF))
        yield
    assert not {"test-rbf", "test-rbf-bias"} & set(kernels.KERNELS) and "test-pairs" not in inducing.FEATURES
    assert "test-laplace" not in likelihoods.LIKELIHOODS


@pytest.mark.parametrize("kernel", [TestRBF(1.3, 0.7), TestRBFBias(0.8, np.array([0.6, 1.4]), 0.3)])
def test_the_test_kernels_gradients_match_finite_differences(kernel):
    """The kernels the labs are given here are right (value and gradients), so a lab's finite
    result is a real one."""
    import reference

    rng = np.random.default_rng(0)
    X, X2 = rng.normal(size=(5, 2)), rng.normal(size=(4, 2))
    W, W2 = rng.normal(size=(5, 5)), rng.normal(size=(5, 4))
    np.testing.assert_allclose(np.diag(kernel.K(X)), kernel.Kdiag(X))
    for name, value in kernel.parameters.items():
        def loss(v, name=name):
            return float(np.sum(W2 * kernel.copy().set_parameters(**{name: v}).K(X, X2))
                         + np.sum(W * kernel.copy().set_parameters(**{name: v}).K(X)))
        analytic = np.asarray(kernel.grad_params(W2, X, X2)[name]) + np.asarray(kernel.grad_params(W, X)[name])
        np.testing.assert_allclose(analytic, reference.numerical_grad(loss, np.asarray(value, dtype=float)),
                                   rtol=1e-5, atol=1e-7)
    dX = kernel.grad_X(W, X) + kernel.grad_X(W2, X, X2)
    num = reference.numerical_grad(lambda Y: float(np.sum(W * kernel.K(Y)) + np.sum(W2 * kernel.K(Y, X2))), X)
    np.testing.assert_allclose(dX, num, rtol=1e-5, atol=1e-7)


def test_register_refuses_a_class_without_a_label_and_a_taken_name():
    class Nameless(kernels.SquaredExponential):
        name, label = "nameless", None

    with pytest.raises(ValueError, match="label"):
        kernels.register(Nameless)
    with pytest.raises(ValueError, match="registered already"):
        kernels.register(TestRBF, name="se")
    assert kernels.register(TestRBF) is TestRBF and kernels.KERNELS["test-rbf"] is TestRBF
    kernels.unregister(TestRBF)
    assert "test-rbf" not in kernels.KERNELS


def test_the_sparse_lab_offers_the_new_kernel_and_feature(registered):
    from gpexplorer.ui import SparseRegressionLab
    from gpexplorer.ui.sparse import settings as lab_settings

    lab = SparseRegressionLab()
    s = lab.settings
    assert s.param.kernel.objects["Test RBF (tests/)"] == "test-rbf"
    assert s.param.feature.objects["Point pairs (tests/)"] == "test-pairs"
    assert covariances.Kuu.find(inducing.InducingPoints, TestRBF) is not None  # the generic pair serves it
    s.kernel = "test-rbf"
    assert s.param.lengthscale.softbounds == (0.1, 2.5) and s.param.variance.softbounds == (0.05, 3.0)
    assert not any(r.error for r in lab.comparison.results.values())
    assert all(np.isfinite(r.log_evidence) for r in lab.comparison.results.values())
    s.kernel = "test-rbf-bias"  # a parameter no other kernel has: a slider from its spec
    assert s.param.bias.precedence == 1 and s.param.bias.softbounds == (0.01, 2.0)
    assert "bias" in lab_settings.control_groups()["Model"]
    before = lab.comparison.results["vfe"].log_evidence
    s.bias = 1.5
    assert lab.comparison.results["vfe"].log_evidence != before and np.isfinite(lab.comparison.results["vfe"].log_evidence)
    s.kernel = "test-rbf"
    assert s.param.bias.precedence == -1
    s.param.update(feature="test-pairs", M=6)
    assert isinstance(lab.feature, PointPairs) and len(lab.feature) == 6
    assert s.param.feature_width.precedence == 1 and s.param.feature_frequency.precedence == -1  # its editor
    assert lab.feature.width == pytest.approx(0.3 * s.lengthscale)  # editor_defaults
    results = lab.comparison.results
    assert results and not any(r.error for r in results.values())
    assert all(np.isfinite(r.log_evidence) for r in results.values())
    s.feature_width = 0.4
    assert lab.feature.width == 0.4
    s.kernel = "se"  # no covariances registered for the pair: refused with the kernels that have them
    assert "Test RBF (tests/)" in lab.badge_pane.object


def test_the_linearized_lab_offers_the_new_kernel(registered):
    from gpexplorer.ui.linearized.lab import LinearizedLab

    lab = LinearizedLab()
    s = lab.settings
    assert s.param.kernel.objects["Test RBF (tests/)"] == "test-rbf"
    assert "test-rbf-bias" not in s.param.kernel.objects.values()  # no random Fourier features for EKS / UKS
    s.kernel = "test-rbf"
    assert s.param.lengthscale.softbounds == (0.1, 2.5)
    if lab.job is not None:
        lab.job.join(180)
        lab.poll_job()
    assert lab.results and all(r.error is None for r in lab.results.values())
    assert all(np.isfinite(r.free_energy) for r in lab.results.values())


def test_the_black_box_lab_offers_the_new_likelihood(registered):
    from gpexplorer.ui.black_box.lab import BlackBoxLab

    lab = BlackBoxLab()
    lab.cancel_job()
    assert lab.settings.param.likelihood.objects["Laplace (tests/)"] == "test-laplace"
    assert "Softmax" not in lab.settings.param.likelihood.objects  # categorical: no such data here
    lab.settings.param.update(dataset="toy_gaussian", likelihood="test-laplace", posteriors=["fg"], rounds=1,
                              evals_per_block=4, M=6, n_train=40)
    while lab.job is not None and lab.job.state == "running":
        lab.job.join(60)
        lab.poll_job()
    lab.poll_job()
    r = lab.results["fg"]
    assert r.error is None, r.error
    assert isinstance(r.model.likelihood, TestLaplace)
    assert np.all(np.isfinite(r.f_mean)) and np.isfinite(r.metrics["nlpd"])
