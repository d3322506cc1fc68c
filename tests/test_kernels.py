"""Generic tests of every covariance function in ``gpexplorer.kernels.KERNELS``.

Each kernel (isotropic and ARD where it has an ARD parameter, D = 1 and D = 3, plus a Sum and
a Product) is checked for: K(X) == K(X, X), Kdiag == diag K, symmetry and positive
semi-definiteness, agreement with the dense reference (tests/reference.py), finite-difference
gradients of every hyperparameter (cross, symmetric and diagonal cases) and of the inputs, and
validation of bad hyperparameters.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import reference
from gpexplorer.kernels import KERNELS, Product, Sum

# ---------------------------------------------------------------------------------------------
# Test cases
# ---------------------------------------------------------------------------------------------

#: non-default hyperparameters per kernel (scalar versions)
BASE_PARAMS = {
    "se": dict(variance=1.3, lengthscale=0.8),
    "matern12": dict(variance=0.9, lengthscale=1.1),
    "matern32": dict(variance=1.4, lengthscale=0.7),
    "matern52": dict(variance=0.8, lengthscale=1.2),
    "rq": dict(variance=1.1, lengthscale=0.9, alpha=0.7),
    "periodic": dict(variance=1.2, lengthscale=0.8, period=1.7),
    "linear": dict(variance=0.6),
}

#: the kernels on vectors; kernels on images (``input_shape``: the convolutional kernel) have their
#: own generic checks in tests/test_convolutional_kernel.py and tests/test_convolutional_gradients.py
VECTOR_KERNELS = [name for name, cls in KERNELS.items() if cls.input_shape is None]

#: which parameter becomes a per-dimension array in the ARD variant
ARD_PARAM = {name: ("variance" if name == "linear" else "lengthscale") for name in VECTOR_KERNELS}



def _ard_values(D):
    return np.linspace(0.6, 1.5, D)


def make_params(name, D, ard):
    params = dict(BASE_PARAMS[name])
    if ard:
        params[ARD_PARAM[name]] = _ard_values(D)
    return params


def make_kernel(case):
    """Build a library kernel from a case tuple (kind, D, ard)."""
    kind, D, ard = case
    if kind == "sum":
        return Sum(KERNELS["se"](**make_params("se", D, ard)),
                   KERNELS["periodic"](**make_params("periodic", D, False)))
    if kind == "product":
        return Product(KERNELS["matern32"](**make_params("matern32", D, ard)),
                       KERNELS["linear"](**make_params("linear", D, ard)))
    return KERNELS[kind](**make_params(kind, D, ard))




CASES = []
for _name in VECTOR_KERNELS:
    for _D in (1, 3):
        for _ard in (False, True):
            CASES.append((_name, _D, _ard))
for _kind in ("sum", "product"):
    for _D in (1, 3):
        for _ard in (False, True):
            CASES.append((_kind, _D, _ard))


def _case_id(case):
    kind, D, ard = case
    return f"{kind}-D{D}-{'ard' if ard else 'iso'}"


def test_case_list_covers_registry():
    """Every registry entry is exercised (guards against a kernel silently dropping out)."""
    names = {c[0] for c in CASES}
    assert set(VECTOR_KERNELS) <= names
    assert set(VECTOR_KERNELS) == {"se", "matern12", "matern32", "matern52", "rq", "periodic", "linear"}
    assert set(KERNELS) - set(VECTOR_KERNELS) == {"convolutional"}  # tested in test_convolutional_*.py


@pytest.fixture(params=CASES, ids=_case_id)
def case(request):
    return request.param


def _inputs(D, n, seed, spread=1.5):
    """Random inputs with no two points (nearly) coincident."""
    rng = np.random.default_rng(seed)
    while True:
        X = rng.uniform(-spread, spread, size=(n, D))
        d2 = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
        np.fill_diagonal(d2, np.inf)
        if d2.min() > 1e-3:
            return X


def _data(case, seed=0):
    D = case[1]
    rng = np.random.default_rng(seed + 100)
    X1 = _inputs(D, 7, seed)
    X2 = _inputs(D, 5, seed + 1)
    # keep X1 and X2 apart too (Matern12 is not differentiable at coincident points)
    d2 = np.sum((X1[:, None, :] - X2[None, :, :]) ** 2, axis=-1)
    assert d2.min() > 1e-4
    dK12 = rng.normal(size=(7, 5))
    dK11 = rng.normal(size=(7, 7))
    ddiag = rng.normal(size=7)
    return X1, X2, dK12, dK11, ddiag


# ---------------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------------


def test_K_symmetric_call_equals_cross_call(case):
    k = make_kernel(case)
    X1, *_ = _data(case)
    np.testing.assert_allclose(k.K(X1), k.K(X1, X1), rtol=1e-12, atol=1e-14)


def test_Kdiag_equals_diagonal(case):
    k = make_kernel(case)
    X1, *_ = _data(case)
    kd = k.Kdiag(X1)
    assert kd.shape == (X1.shape[0],)
    np.testing.assert_allclose(kd, np.diag(k.K(X1)), rtol=1e-12, atol=1e-14)


def test_K_symmetric_psd(case):
    k = make_kernel(case)
    X1 = _inputs(case[1], 25, seed=3)
    K = k.K(X1)
    assert K.shape == (25, 25)
    np.testing.assert_allclose(K, K.T, rtol=1e-13, atol=1e-15)
    eig = np.linalg.eigvalsh(K)
    assert eig.min() > -1e-8 * eig.max(), (eig.min(), eig.max())


def test_K_matches_reference(case):
    k = make_kernel(case)
    X1, X2, *_ = _data(case)
    np.testing.assert_allclose(k.K(X1, X2), reference.ref_K(k, X1, X2), rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(k.K(X1), reference.ref_K(k, X1, X1), rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(k.Kdiag(X2), np.diag(reference.ref_K(k, X2, X2)), rtol=1e-8, atol=1e-12)


def test_K_shapes_and_1d_inputs():
    k = KERNELS["se"]()
    x = np.linspace(0, 1, 4)
    assert k.K(x).shape == (4, 4)
    assert k.K(x, x[:3]).shape == (4, 3)
    np.testing.assert_allclose(k.K(x), k.K(x[:, None]))


# ---------------------------------------------------------------------------------------------
# Gradients
# ---------------------------------------------------------------------------------------------


def _fd_param_grad(kernel, name, fun):
    """Finite-difference gradient of fun(kernel copy with parameter ``name`` changed)."""

    def f(v):
        kk = kernel.copy()
        kk.set_parameters(**{name: v if np.ndim(v) else float(v)})
        return fun(kk)

    return reference.numerical_grad(f, np.asarray(kernel.parameters[name], dtype=float))


def _check_all_params(kernel, analytic, fun):
    assert set(analytic) == set(kernel.param_names), (sorted(analytic), kernel.param_names)
    for name in kernel.param_names:
        a = np.asarray(analytic[name], dtype=float)
        assert a.shape == np.shape(kernel.parameters[name]), f"{name}: gradient shape {a.shape}"
        num = _fd_param_grad(kernel, name, fun)
        try:
            reference.check_grad_close(a, num, rtol=1e-5, atol=1e-7)
        except AssertionError as err:
            raise AssertionError(f"parameter {name!r}: {err}") from None


def test_grad_params_cross(case):
    k = make_kernel(case)
    X1, X2, dK12, _, _ = _data(case)
    analytic = k.grad_params(dK12, X1, X2)
    _check_all_params(k, analytic, lambda kk: np.sum(dK12 * kk.K(X1, X2)))


def test_grad_params_symmetric(case):
    k = make_kernel(case)
    X1, _, _, dK11, _ = _data(case)
    analytic = k.grad_params(dK11, X1)
    _check_all_params(k, analytic, lambda kk: np.sum(dK11 * kk.K(X1)))


def test_grad_params_diag(case):
    k = make_kernel(case)
    X1, _, _, _, ddiag = _data(case)
    analytic = k.grad_params_diag(ddiag, X1)
    _check_all_params(k, analytic, lambda kk: np.sum(ddiag * kk.Kdiag(X1)))


def test_grad_X_cross(case):
    k = make_kernel(case)
    X1, X2, dK12, _, _ = _data(case)
    analytic = k.grad_X(dK12, X1, X2)
    assert analytic.shape == X1.shape
    num = reference.numerical_grad(lambda X: np.sum(dK12 * k.K(X, X2)), X1)
    reference.check_grad_close(analytic, num, rtol=1e-5, atol=1e-7)


def test_grad_X_symmetric(case):
    k = make_kernel(case)
    X1, _, _, dK11, _ = _data(case)
    analytic = k.grad_X(dK11, X1)
    assert analytic.shape == X1.shape
    num = reference.numerical_grad(lambda X: np.sum(dK11 * k.K(X)), X1)
    reference.check_grad_close(analytic, num, rtol=1e-5, atol=1e-7)


def test_grad_params_and_X_agrees_with_separate_calls(case):
    k = make_kernel(case)
    X1, X2, dK12, dK11, _ = _data(case)
    for X2_, dK in ((X2, dK12), (None, dK11)):
        p, g = k.grad_params_and_X(dK, X1, X2_)
        p_sep = k.grad_params(dK, X1, X2_)
        assert set(p) == set(p_sep)
        for n in p:
            np.testing.assert_allclose(p[n], p_sep[n], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(g, k.grad_X(dK, X1, X2_), rtol=1e-12, atol=1e-14)


def test_grad_zero_dL_gives_zero(case):
    k = make_kernel(case)
    X1, X2, *_ = _data(case)
    g = k.grad_params(np.zeros((X1.shape[0], X2.shape[0])), X1, X2)
    for v in g.values():
        np.testing.assert_array_equal(np.asarray(v), 0.0)
    np.testing.assert_array_equal(k.grad_X(np.zeros((X1.shape[0], X2.shape[0])), X1, X2), 0.0)


# ---------------------------------------------------------------------------------------------
# Parameters and validation
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", VECTOR_KERNELS)
def test_params_roundtrip_and_copy_is_independent(name):
    k = KERNELS[name](**BASE_PARAMS[name])
    for p, v in BASE_PARAMS[name].items():
        assert k.parameters[p] == pytest.approx(v)
    c = k.copy()
    c.set_parameters(variance=5.0)
    assert k.parameters["variance"] == pytest.approx(BASE_PARAMS[name]["variance"])
    assert c.parameters["variance"] == 5.0
    # params returns copies: mutating an ARD array from params must not change the kernel
    ka = KERNELS[name](**make_params(name, 3, True))
    arr = ka.parameters[ARD_PARAM[name]]
    arr[:] = 99.0
    assert not np.any(ka.parameters[ARD_PARAM[name]] == 99.0)


BAD_VALUES = [
    (0.0, "positive"),
    (-1.0, "positive"),
    (math.nan, "finite"),
    (math.inf, "finite"),
    (-math.inf, "finite"),
]


@pytest.mark.parametrize("bad,msg", BAD_VALUES, ids=["zero", "negative", "nan", "inf", "-inf"])
@pytest.mark.parametrize("name", VECTOR_KERNELS)
def test_bad_hyperparameters_raise(name, bad, msg):
    for pname in BASE_PARAMS[name]:
        params = dict(BASE_PARAMS[name])
        params[pname] = bad
        with pytest.raises(ValueError, match=f"{pname}.*{msg}"):
            KERNELS[name](**params)
        k = KERNELS[name](**BASE_PARAMS[name])
        with pytest.raises(ValueError, match=f"{pname}.*{msg}"):
            k.set_parameters(**{pname: bad})
        # a failed set_parameters leaves the old value in place
        assert k.parameters[pname] == pytest.approx(BASE_PARAMS[name][pname])


@pytest.mark.parametrize("bad,msg", BAD_VALUES, ids=["zero", "negative", "nan", "inf", "-inf"])
@pytest.mark.parametrize("name", VECTOR_KERNELS)
def test_bad_ard_entry_raises(name, bad, msg):
    pname = ARD_PARAM[name]
    values = _ard_values(3)
    values[1] = bad
    with pytest.raises(ValueError, match=f"{pname}.*{msg}"):
        KERNELS[name](**{**BASE_PARAMS[name], pname: values})


@pytest.mark.parametrize("name", VECTOR_KERNELS)
def test_wrong_ard_length_raises(name):
    pname = ARD_PARAM[name]
    k = KERNELS[name](**{**BASE_PARAMS[name], pname: _ard_values(2)})
    X = _inputs(3, 4, seed=0)
    with pytest.raises(ValueError, match=r"2 entries.*3 dimensions"):
        k.K(X)
    with pytest.raises(ValueError, match=r"2 entries.*3 dimensions"):
        k.K(X, X[:2])
    with pytest.raises(ValueError, match=r"2 entries.*3 dimensions"):
        k.grad_X(np.ones((4, 4)), X)
    with pytest.raises(ValueError, match=r"2 entries.*3 dimensions"):
        k.check_input_dim(3)
    k.check_input_dim(2)  # the matching dimension is fine
    # a gradient must never come back with a different shape from its parameter
    with pytest.raises(ValueError, match=r"2 entries.*3 dimensions"):
        k.grad_params(np.ones((4, 4)), X)


@pytest.mark.parametrize("name", VECTOR_KERNELS)
def test_wrong_ard_length_raises_in_diagonal_operations(name):
    """Kdiag / grad_params_diag are validated like K: a 2-entry ARD parameter with 3-D inputs
    is an error, not a silently accepted (or wrongly shaped) result."""
    pname = ARD_PARAM[name]
    k = KERNELS[name](**{**BASE_PARAMS[name], pname: _ard_values(2)})
    X = _inputs(3, 4, seed=0)
    with pytest.raises(ValueError, match=r"2 entries.*3 dimensions"):
        k.Kdiag(X)
    with pytest.raises(ValueError, match=r"2 entries.*3 dimensions"):
        k.grad_params_diag(np.ones(4), X)


@pytest.mark.parametrize("name", VECTOR_KERNELS)
def test_non_ard_parameter_rejects_array(name):
    scalar_only = [p for p in BASE_PARAMS[name] if p != ARD_PARAM[name]]
    for pname in scalar_only:
        with pytest.raises(ValueError, match=f"{pname}.*scalar"):
            KERNELS[name](**{**BASE_PARAMS[name], pname: [1.0, 2.0]})
    with pytest.raises(ValueError, match=ARD_PARAM[name]):
        KERNELS[name](**{**BASE_PARAMS[name], ARD_PARAM[name]: np.ones((2, 2))})
    with pytest.raises(ValueError, match=f"{ARD_PARAM[name]}.*empty"):
        KERNELS[name](**{**BASE_PARAMS[name], ARD_PARAM[name]: []})


@pytest.mark.parametrize("name", VECTOR_KERNELS)
def test_unknown_parameter_name_raises(name):
    k = KERNELS[name]()
    with pytest.raises(ValueError, match="no parameter 'lenghtscale'"):
        k.set_parameters(lenghtscale=1.0)


def test_combination_parameter_names_and_errors():
    k = KERNELS["se"](variance=2.0, lengthscale=0.5) + KERNELS["linear"](variance=0.3)
    assert isinstance(k, Sum)
    assert k.param_names == ("0.variance", "0.lengthscale", "1.variance")
    assert k.parameters == {"0.variance": 2.0, "0.lengthscale": 0.5, "1.variance": 0.3}
    k.set_parameters(**{"1.variance": 0.7})
    assert k.kernels[1].variance == 0.7
    for bad in ("2.variance", "variance", "x.variance"):
        with pytest.raises(ValueError, match="no parameter"):
            k.set_parameters(**{bad: 1.0})
    with pytest.raises(ValueError, match="no parameter 'foo'"):
        k.set_parameters(**{"0.foo": 1.0})
    with pytest.raises(ValueError, match="0.lengthscale.*positive|lengthscale.*positive"):
        k.set_parameters(**{"0.lengthscale": -1.0})
    p = KERNELS["se"]() * KERNELS["periodic"]()
    assert isinstance(p, Product)
    assert p.param_names == ("0.variance", "0.lengthscale", "1.variance", "1.lengthscale", "1.period")
    # nested sums flatten
    s3 = k + KERNELS["matern12"]()
    assert len(s3.kernels) == 3 and s3.param_names[-1] == "2.lengthscale"
    with pytest.raises(ValueError, match="Kernel"):
        Sum(KERNELS["se"](), 3.0)


def test_combination_wrong_ard_length_raises():
    k = KERNELS["se"](lengthscale=[1.0, 2.0]) * KERNELS["linear"]()
    with pytest.raises(ValueError, match=r"2 entries.*3 dimensions"):
        k.K(np.zeros((2, 3)))


def test_inputs_with_mismatched_columns_raise():
    for name in KERNELS:
        k = KERNELS[name]()
        with pytest.raises(ValueError):
            k.K(np.zeros((3, 2)), np.zeros((4, 3)))


def test_3d_inputs_raise():
    with pytest.raises(ValueError, match="2-D"):
        KERNELS["se"]().K(np.zeros((2, 2, 2)))
