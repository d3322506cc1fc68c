"""The compiled sparse path after issue 13 (items 8 and 11): work arrays kept in a Workspace,
K(Z, X) exponentiated by numpy, FITC's blocked products, the grouped jitted signatures and the
fit driver against a plain scipy.optimize.minimize run.

Sizes here are chosen to reach the code paths the small problems of test_sparse.py do not:
K(Z, X) with at least ``SIMD_MIN_ENTRIES`` entries, and more data points than one FITC block.
"""

from __future__ import annotations

import ast
import copy
import pathlib
import threading

import numpy as np
import pytest

import reference
from gpexplorer import covariances, kernels, models
from gpexplorer import optimize
from gpexplorer.kernels import _loops as kl
from gpexplorer.sparse import _core as core
from gpexplorer.sparse import objectives
from gpexplorer.sparse.fused import FUSED_OBJECTIVES
from gpexplorer.workspace import Workspace

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "gpexplorer"
JITTER = 1e-6
N_LARGE, M_LARGE = 700, 9  # 6300 entries in K(Z, X); 700 columns = three FITC blocks
STATIONARY = {"se": kernels.SquaredExponential, "matern12": kernels.Matern12, "matern32": kernels.Matern32,
              "matern52": kernels.Matern52, "rq": kernels.RationalQuadratic}


def problem(N=N_LARGE, M=M_LARGE, D=1, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3.0, 3.0, size=(N, D))
    y = np.sin(X.sum(axis=1)) + 0.3 * rng.normal(size=N)
    Z = np.linspace(-2.7, 2.9, M)[:, None] if D == 1 else rng.uniform(-2.5, 2.5, size=(M, D))
    return X, y, Z


def kernel(name, D):
    k = STATIONARY[name]()
    k.set_parameters(variance=1.3, lengthscale=np.linspace(0.7, 1.4, D) if D > 1 else 0.8)
    if name == "rq":
        k.set_parameters(alpha=1.7)
    return k


def test_large_problems_reach_the_new_code_paths():
    assert N_LARGE * M_LARGE >= kl.SIMD_MIN_ENTRIES
    assert N_LARGE > 2 * core.FITC_BLOCK


# ---------------------------------------------------------------------------------------------
# K(Z, X) with numpy's exp
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("D", [1, 3])
@pytest.mark.parametrize("name", sorted(STATIONARY))
def test_kernel_matrix_matches_the_scalar_loop_and_the_reference(name, D):
    X, _, Z = problem(D=D)
    k = kernel(name, D)
    ls = np.broadcast_to(np.asarray(k.lengthscale, float), (D,)).copy()
    params = kl.stationary_params(k._kind, k.variance, ls, k._alpha)
    Zs, Xs = Z / ls, np.ascontiguousarray(X / ls)
    fast = kl.kernel_matrix(params, Zs, Xs)  # [M, N], numpy's exp
    scalar = kl.fill_stationary_K(params, Zs, Xs, np.empty_like(fast))
    np.testing.assert_allclose(fast, scalar, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(k.K(Z, X), reference.ref_K(k, Z, X), rtol=1e-12, atol=1e-300)


def test_kernel_matrix_writes_into_out():
    X, _, Z = problem()
    params = kl.stationary_params(kl.SE, 1.0, np.ones(1), 1.0)
    out = np.full((Z.shape[0], X.shape[0]), np.nan)
    assert kl.kernel_matrix(params, Z, X, out=out) is out
    assert np.all(np.isfinite(out))


# ---------------------------------------------------------------------------------------------
# the fused path and the generic path at sizes past the small-problem branches
# ---------------------------------------------------------------------------------------------


def _generic(m):
    """Objective and gradients through covariances + collapsed_objective (no fused path)."""
    Kuu = covariances.Kuu(m.inducing, m.kernel)
    Kuf = covariances.Kuf(m.inducing, m.kernel, m.X)
    r, _ = objectives.collapsed_objective(Kuu, Kuf, m.kernel.Kdiag(m.X), m.y, m.noise_variance, m.jitter,
                                          m.approximation, grad=True)
    g_kernel, g_feature = covariances.gradients(m.inducing, m.kernel, m.X, r.dKuu, r.dKuf, Kuu=Kuu, Kuf=Kuf)
    g_kernel["variance"] = g_kernel["variance"] + float(np.sum(r.dKdiag))
    return r.value, {**g_kernel, "noise_variance": r.dnoise, **g_feature}


@pytest.mark.parametrize("approximation", ["dtc", "vfe", "fitc"])
@pytest.mark.parametrize("name, D", [("se", 1), ("matern32", 1), ("matern52", 3), ("rq", 1)])
def test_fused_path_matches_reference_and_generic_path(name, D, approximation):
    X, y, Z = problem(D=D)
    m = models.SparseGPR(X, y, kernel(name, D), Z=Z, approximation=approximation, noise_variance=0.15,
                         jitter=JITTER)
    F, grads, terms = m.objective_and_gradient()
    Kff = reference.ref_K(m.kernel, X, X)
    Kuf = reference.ref_K(m.kernel, Z, X)
    Kuu = reference.ref_K(m.kernel, Z, Z) + JITTER * np.eye(len(Z))
    ref = {"dtc": reference.ref_dtc, "vfe": reference.ref_vfe, "fitc": reference.ref_fitc}[approximation]
    expected = ref(Kff, Kuf, Kuu, y, m.noise_variance)
    np.testing.assert_allclose(F, expected["neg_lml"], rtol=1e-10)
    for key, value in terms.items():
        np.testing.assert_allclose(value, expected[key], rtol=1e-10, atol=1e-10, err_msg=key)
    F_generic, g_generic = _generic(m)
    assert F == pytest.approx(F_generic, rel=1e-12)
    for key, value in grads.items():
        np.testing.assert_allclose(value, g_generic[key], rtol=1e-8, atol=1e-8 * np.max(np.abs(g_generic[key])),
                                   err_msg=key)


@pytest.mark.parametrize("approximation", ["vfe", "fitc"])
def test_fused_gradients_finite_difference_on_a_large_problem(approximation):
    X, y, Z = problem(seed=3)
    m = models.SparseGPR(X, y, kernel("se", 1), Z=Z, approximation=approximation, noise_variance=0.15,
                         jitter=JITTER)
    _, grads = m.log_marginal_likelihood(eval_gradient=True)
    for name, value in m.parameters.items():
        def f(v, name=name):
            mm = m.copy()
            mm.set_parameters(**{name: v if np.ndim(v) else float(v)})
            return mm.log_marginal_likelihood()

        reference.check_grad_close(grads[name], reference.numerical_grad(f, np.asarray(value, float)),
                                   rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# Workspace
# ---------------------------------------------------------------------------------------------


def _matrices(approximation="vfe", N=N_LARGE, M=M_LARGE):
    X, y, Z = problem(N=N, M=M)
    k = kernel("se", 1)
    return k.K(Z), k.K(Z, X), k.Kdiag(X), y


def _same(a, b):
    assert a[0].value == b[0].value and a[0].terms == b[0].terms
    for attr in ("dKuu", "dKuf", "dKdiag"):
        np.testing.assert_array_equal(getattr(a[0], attr), getattr(b[0], attr))
    np.testing.assert_array_equal(a[1].weights, b[1].weights)


@pytest.mark.parametrize("approximation", ["sor", "dtc", "vfe", "fitc"])
def test_workspace_gives_the_same_result_and_keeps_its_arrays(approximation):
    Kuu, Kuf, kdiag, y = _matrices()
    ws = Workspace()
    fresh = objectives.collapsed_objective(Kuu, Kuf, kdiag, y, 0.1, JITTER, approximation, grad=True)
    first = objectives.collapsed_objective(Kuu, Kuf, kdiag, y, 0.1, JITTER, approximation, grad=True, workspace=ws)
    arrays = {k: id(v) for k, v in ws._arrays.items() if k != "last"}
    second = objectives.collapsed_objective(Kuu, Kuf, kdiag, y, 0.1, JITTER, approximation, grad=True,
                                            workspace=ws)
    _same(fresh, first)
    _same(first, second)
    assert {k: id(v) for k, v in ws._arrays.items() if k != "last"} == arrays  # reused, not reallocated
    assert ws.nbytes >= Kuf.nbytes
    assert ws.nbytes <= (3 if approximation == "fitc" else 1) * Kuf.nbytes + Kuf.shape[0] * core.FITC_BLOCK * 8


def test_results_never_alias_the_workspace():
    Kuu, Kuf, kdiag, y = _matrices()
    ws = Workspace()
    r, post = objectives.collapsed_objective(Kuu, Kuf, kdiag, y, 0.1, JITTER, "fitc", grad=True, workspace=ws)
    kept = copy.deepcopy((r.dKuu, r.dKuf, r.dKdiag, r.extras["g"], post.L, post.LB, post.weights))
    for a in (v for v in ws._arrays.values() if isinstance(v, np.ndarray)):
        a.fill(np.nan)
    for before, after in zip(kept, (r.dKuu, r.dKuf, r.dKdiag, r.extras["g"], post.L, post.LB, post.weights)):
        np.testing.assert_array_equal(before, after)


def test_workspace_follows_shape_changes_and_can_be_cleared():
    ws = Workspace()
    small = _matrices(N=300, M=5)
    large = _matrices(N=N_LARGE, M=M_LARGE)
    objectives.collapsed_objective(*small, 0.1, JITTER, "vfe", grad=True, workspace=ws)
    assert ws._arrays["A"].shape == (5, 300)
    r_ws, _ = objectives.collapsed_objective(*large, 0.1, JITTER, "vfe", grad=True, workspace=ws)
    r, _ = objectives.collapsed_objective(*large, 0.1, JITTER, "vfe", grad=True)
    assert ws._arrays["A"].shape == (M_LARGE, N_LARGE)
    assert r_ws.value == r.value
    ws.clear()
    assert ws.nbytes == 0


def test_a_busy_workspace_is_not_shared():
    """A second thread finding the workspace in use computes with its own arrays."""
    Kuu, Kuf, kdiag, y = _matrices()
    ws = Workspace()
    objectives.collapsed_objective(Kuu, Kuf, kdiag, y, 0.1, JITTER, "fitc", grad=True, workspace=ws)
    for a in (v for v in ws._arrays.values() if isinstance(v, np.ndarray)):
        a.fill(7.0)
    expected = objectives.collapsed_objective(Kuu, Kuf, kdiag, y, 0.1, JITTER, "fitc", grad=True)
    assert ws._lock.acquire()  # as if another evaluation were running
    try:
        got = objectives.collapsed_objective(Kuu, Kuf, kdiag, y, 0.1, JITTER, "fitc", grad=True, workspace=ws)
    finally:
        ws._lock.release()
    _same(expected, got)
    assert all(np.all(a == 7.0) for a in ws._arrays.values() if isinstance(a, np.ndarray))


def test_threads_sharing_a_workspace_get_correct_results():
    X, y, Z = problem()
    k = kernel("se", 1)
    kind, variance, ls, alpha = k.fused_arguments(1)
    ws = Workspace()
    expected = objectives.fused_stationary_objective(kind, X, y, Z, variance, ls, alpha, 0.1, jitter=JITTER,
                                                     approximation="fitc")
    out, errors = [], []

    def work():
        try:
            for _ in range(20):
                out.append(objectives.fused_stationary_objective(kind, X, y, Z, variance, ls, alpha, 0.1,
                                                                 jitter=JITTER, approximation="fitc", workspace=ws))
        except Exception as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(out) == 60
    for o in out:
        assert o.value == expected.value
        np.testing.assert_array_equal(o.dZ, expected.dZ)


def test_fused_path_with_workspace_equals_without():
    X, y, Z = problem()
    m = models.SparseGPR(X, y, kernel("matern32", 1), Z=Z, approximation="vfe", noise_variance=0.1)
    fused = FUSED_OBJECTIVES.find(type(m.inducing), type(m.kernel))
    args = (m.inducing, m.kernel, m.X, m.y, m.noise_variance, m.jitter, m.approximation)
    ws = Workspace()
    a = fused(*args)
    b = fused(*args, workspace=ws)
    c = fused(*args, workspace=ws)
    assert a[0] == b[0] == c[0]
    np.testing.assert_array_equal(a[2]["Z"], c[2]["Z"])
    assert set(ws._arrays) >= {"Xs", "Kuf", "A"}


def test_a_deep_copy_gets_its_own_empty_workspace():
    ws = Workspace()
    objectives.collapsed_objective(*_matrices(), 0.1, JITTER, "vfe", workspace=ws)
    other = copy.deepcopy(ws)
    assert other is not ws and other.nbytes == 0 and ws.nbytes > 0


# ---------------------------------------------------------------------------------------------
# jitted signatures (issue 13, item 8)
# ---------------------------------------------------------------------------------------------

JITTED_HERE = ("kernels/_loops.py", "sparse/_core.py", "_blas.py")


@pytest.mark.parametrize("module", JITTED_HERE)
def test_jitted_functions_take_few_arguments_and_return_short_tuples(module):
    tree = ast.parse((PACKAGE / module).read_text())
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef):
            continue
        names = {getattr(d, "id", getattr(d, "attr", "")) for d in node.decorator_list}
        if not names & {"njit_cached", "njit_kernel_loop"}:
            continue
        assert len(node.args.args) <= 6, f"{module}:{node.name} takes {len(node.args.args)} arguments"
        for ret in ast.walk(node):
            if isinstance(ret, ast.Return) and isinstance(ret.value, ast.Tuple):
                assert len(ret.value.elts) <= 4, f"{module}:{node.name} returns a {len(ret.value.elts)}-tuple"


def test_the_former_flat_signatures_are_gone():
    """The kernels call the contractions with their parameters as one named tuple
    (stationary_grads took 11 positional arguments, periodic_grads 7)."""
    assert not hasattr(kl, "stationary_grads") and not hasattr(kl, "periodic_grads")


# ---------------------------------------------------------------------------------------------
# the fit driver against a plain scipy.optimize.minimize run on the same objective
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("approximation", ["vfe", "fitc"])
def test_fit_follows_scipy_minimize(approximation):
    from scipy.optimize import minimize

    X, y, Z = problem(N=60, M=6)
    base = models.SparseGPR(X, y, kernel("se", 1), Z=Z, approximation=approximation, noise_variance=0.5)
    base.set_bounds(noise_variance=(0.2, 10.0))  # the noise runs into this bound
    lean = base.copy().fit(max_iter=80)
    probe = base.copy()
    packer = optimize.Packer(probe.parameter_specs, probe.parameters)
    objective = optimize.ModelObjective(probe, packer, 0)
    seen = []
    plain = minimize(objective, packer.pack(probe.parameters), jac=True, method="L-BFGS-B", bounds=packer.bounds,
                     callback=lambda xk: seen.append(objective(xk)[0]), options={"maxiter": 80})
    assert lean.n_iter == plain.nit and lean.message == plain.message and lean.success == plain.success
    assert len(lean.trace) == len(seen) + 1
    for a, b in zip(lean.trace[1:], seen):
        assert a.objective == pytest.approx(b, rel=1e-12, abs=1e-12)
    assert lean.objective == pytest.approx(min(seen + [lean.trace[0].objective]), rel=1e-12)
    assert min(e.params["noise_variance"] for e in lean.trace) == pytest.approx(0.2, rel=1e-9)


# ---------------------------------------------------------------------------------------------
# the large-N, large-M blocked paths under numba's bounds checking: tests/test_compiled_bounds.py

