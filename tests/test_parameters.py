"""Parameters declare their own bounds and transform; optimisers read them from the model."""

import importlib
import warnings

import numpy as np
import pytest

from gpexplorer import datasets, kernels, models
from gpexplorer.optimize import Packer
from gpexplorer.parameters import POSITIVE_RANGE, Parameter, bounded_specs


def test_log_parameter_round_trip_and_chain():
    p = Parameter("lengthscale", 1e-3, 1e3)
    value = np.array([0.5, 2.0])
    u = p.to_free(value)
    np.testing.assert_allclose(u, np.log(value))
    np.testing.assert_allclose(p.from_free(u, (2,)), value)
    assert p.from_free(np.log([3.0]), ()) == pytest.approx(3.0)
    np.testing.assert_allclose(p.chain(value, np.array([1.0, -2.0])), [0.5, -4.0])  # dF/dlog t = t dF/dt
    assert p.free_bounds() == pytest.approx((np.log(1e-3), np.log(1e3)))
    np.testing.assert_allclose(p.to_free(1e9), np.log(1e3))  # outside the box: clipped into it


def test_real_parameter_is_unbounded_and_untransformed():
    p = Parameter.real("centres")
    assert p.free_bounds() == (None, None)
    np.testing.assert_array_equal(p.to_free([[1.0], [-2.0]]), [1.0, -2.0])
    np.testing.assert_array_equal(p.chain([[1.0], [-2.0]], [[3.0], [4.0]]), [3.0, 4.0])


@pytest.mark.parametrize("args, match", [
    (("v", 2.0, 1.0), "lower < upper"),
    (("v", 0.0, 1.0), "positive and finite"),
    (("v", 1.0, np.inf), "positive and finite"),
    (("v", 1.0, 2.0, "softplus"), "transform"),
])
def test_bad_boxes_are_refused(args, match):
    with pytest.raises(ValueError, match=match):
        Parameter(*args)


def test_bounded_specs_refuses_unknown_names():
    specs = {"a": Parameter("a")}
    assert bounded_specs(specs, {"a": (0.1, 10)})["a"].upper == 10
    with pytest.raises(ValueError, match="no parameter"):
        bounded_specs(specs, {"b": (0.1, 10)})


def test_kernel_bounds_are_per_instance_and_reach_sums():
    k = kernels.SquaredExponential()
    assert k.parameter_specs["variance"].lower == POSITIVE_RANGE[0]
    k.set_bounds(lengthscale=(0.1, 5.0))
    assert (k.parameter_specs["lengthscale"].lower, k.parameter_specs["lengthscale"].upper) == (0.1, 5.0)
    assert kernels.SquaredExponential().parameter_specs["lengthscale"].upper == POSITIVE_RANGE[1]
    s = kernels.SquaredExponential() + kernels.Periodic()
    s.set_bounds(**{"1.period": (0.5, 2.0)})
    assert s.parameter_specs["1.period"].upper == 2.0 and s.kernels[1].parameter_specs["period"].lower == 0.5
    with pytest.raises(ValueError, match="no parameter"):
        k.set_bounds(period=(1, 2))
    assert k.copy().parameter_specs["lengthscale"].upper == 5.0  # copies keep their box


@pytest.mark.parametrize("approximation", ["vfe", "fitc", None])
def test_a_fit_stays_inside_a_tight_box(approximation):
    """On Snelson the free lengthscale is about 0.6; boxed into [1, 2] the fit ends on its edge."""
    ds = datasets.load("snelson")
    k = kernels.SquaredExponential(1.0, 1.5)
    if approximation is None:
        m = models.ExactGPR(ds.X, ds.y, kernel=k, noise_variance=0.1)
    else:
        m = models.SparseGPR(ds.X, ds.y, kernel=k, Z=8, z_init="even", approximation=approximation,
                             noise_variance=0.1)
    m.set_bounds(lengthscale=(1.0, 2.0), noise_variance=(0.05, 0.5))
    m.fit(max_iter=100)
    assert 1.0 - 1e-9 <= m.kernel.lengthscale <= 2.0 + 1e-9
    assert m.kernel.lengthscale == pytest.approx(1.0, rel=1e-6)
    assert 0.05 - 1e-12 <= m.noise_variance <= 0.5 + 1e-12
    free = models.SparseGPR(ds.X, ds.y, kernel=kernels.SquaredExponential(1.0, 1.5), Z=8, z_init="even",
                            noise_variance=0.1)
    free.fit(max_iter=100)
    assert free.kernel.lengthscale < 0.9  # the box, not the data, stopped the bounded fit


def test_model_specs_cover_every_parameter_and_the_packer_uses_them():
    ds = datasets.load("snelson")
    m = models.SparseGPR(ds.X, ds.y, kernel=kernels.SquaredExponential(), Z=5, z_init="even")
    assert set(m.parameter_specs) == set(m.parameters)
    assert m.parameter_specs["Z"].transform == "identity"
    packer = Packer(m.parameter_specs, m.parameters, fixed={"variance"})
    lo, hi = packer.box()
    assert len(lo) == packer.pack(m.parameters).size == 1 + 1 + 5
    assert np.isinf(lo[-5:]).all() and np.isfinite(lo[:2]).all()
    back = packer.unpack(packer.pack(m.parameters))
    np.testing.assert_allclose(back["Z"], m.Z)
    with pytest.raises(ValueError, match="inducing feature"):
        m.set_bounds(Z=(0, 1))


def test_set_parameters_takes_keywords_or_a_mapping():
    ds = datasets.load("snelson")
    m = models.SparseGPR(ds.X, ds.y, kernel=kernels.SquaredExponential(), Z=4, z_init="even")
    m.set_parameters(lengthscale=0.7, noise_variance=0.2)
    other = models.SparseGPR(ds.X, ds.y, kernel=kernels.SquaredExponential(), Z=4, z_init="random", seed=1)
    other.set_parameters(**m.parameters)
    assert other.kernel.lengthscale == 0.7 and other.noise_variance == 0.2
    np.testing.assert_array_equal(other.Z, m.Z)
    with pytest.raises(ValueError, match="positive"):
        m.set_parameters(lengthscale=-1.0)
    with pytest.raises(ValueError, match="keep shape"):
        m.set_parameters(Z=np.zeros((3, 1)))


@pytest.mark.parametrize("old", ["gpexplorer.linearized_experiments", "gpexplorer.comparison",
                                 "gpexplorer.forward_models", "gpexplorer.warmup"])
def test_the_flat_layouts_module_paths_are_gone(old):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)


def test_new_paths_import_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        importlib.import_module("gpexplorer.sparse.comparison")
        from gpexplorer.models import ExactGPR, LinearizedGP, LinearizedKitchenSinks, SparseGPR  # noqa: F401
