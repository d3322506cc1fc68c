"""Forward models: values against direct formulas, Jacobians against central differences."""

import warnings
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from gpexplorer.likelihoods.forward_models import (
    FORWARD_MODELS, ExpressionForwardModel, ForwardModel, Seismic, Softmax, get_forward_model,
)

SCALAR_FORMULAS = {  # direct transcriptions of EGP paper Table 1 / sec. 4.2
    "identity": lambda f: f,
    "poly3": lambda f: f ** 3 + f ** 2 + f,
    "exp": np.exp,
    "sin": np.sin,
    "tanh2": lambda f: np.tanh(2 * f),
    "sign_cubic": lambda f: 2 * np.sign(f) + f ** 3,
    "logistic": lambda f: 1.0 / (1.0 + np.exp(-f)),
}
OPTIONS = {"softmax": {"n_classes": 4}, "seismic": {"n_layers": 3}}


def central_difference_jacobian(model, F, rel_step=1e-6):
    """(N, P, Q) Jacobian by central differences, one latent column at a time."""
    N, Q = F.shape
    J = np.empty((N, model.n_outputs, Q))
    for q in range(Q):
        h = rel_step * np.maximum(1.0, np.abs(F[:, q]))
        up, down = F.copy(), F.copy()
        up[:, q] += h
        down[:, q] -= h
        J[:, :, q] = (model.value(up) - model.value(down)) / (2 * h[:, None])
    return J


def seismic_latents(rng, N, P, clipped_layer=None):
    """Depths increasing by >= 0.3 (far from the clipping kinks) and velocities in [1, 3]."""
    depths = np.cumsum(rng.uniform(0.3, 1.5, size=(N, P)), axis=1)
    if clipped_layer is not None:  # push one layer well above its predecessor: clipping active
        depths[:, clipped_layer] = depths[:, clipped_layer - 1] - rng.uniform(0.3, 1.0, size=N)
    velocity = rng.uniform(1.0, 3.0, size=(N, P))
    return np.hstack([depths, velocity])


def seismic_reference(depths, velocity):
    """EKS eq. 38 as written: recursion over p with the depth clipping applied in order."""
    N, P = depths.shape
    times = np.empty((N, P))
    for n in range(N):
        previous_depth, previous_time = 0.0, 0.0
        for p in range(P):
            depth = depths[n, p] if p == 0 else max(depths[n, p], previous_depth)
            times[n, p] = 2 * (depth - previous_depth) / velocity[n, p] + previous_time
            previous_depth, previous_time = depth, times[n, p]
    return times


def latents_for(name, rng, N=25):
    model = get_forward_model(name, **OPTIONS.get(name, {}))
    if name == "seismic":
        return model, seismic_latents(rng, N, model.n_layers)
    F = rng.uniform(-2.0, 2.0, size=(N, model.n_latent))
    return model, F


def test_registry_holds_the_papers_models():
    assert set(FORWARD_MODELS) == {"identity", "poly3", "exp", "sin", "tanh2", "sign_cubic", "logistic",
                                   "softmax", "seismic"}
    for name in FORWARD_MODELS:
        model = get_forward_model(name)
        assert isinstance(model, ForwardModel) and model.name == name


@pytest.mark.parametrize("name", sorted(SCALAR_FORMULAS))
def test_scalar_values_match_formulas_elementwise_on_any_shape(name):
    rng = np.random.default_rng(1)
    model = get_forward_model(name)
    assert (model.n_latent, model.n_outputs) == (1, 1)
    for shape in [(30, 1), (30,), (4, 5, 2)]:
        f = rng.uniform(-3, 3, size=shape)
        out = model.value(f)
        assert out.shape == shape
        np.testing.assert_allclose(out, SCALAR_FORMULAS[name](f), rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("name", [n for n in FORWARD_MODELS if n != "sign_cubic"])
def test_jacobian_matches_central_differences(name):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    model, F = latents_for(name, rng)
    J = model.jacobian(F)
    assert J.shape == (F.shape[0], model.n_outputs, model.n_latent)
    np.testing.assert_allclose(J, central_difference_jacobian(model, F), rtol=1e-7, atol=1e-8)


def test_scalar_derivative_is_the_jacobian_entry():
    f = np.linspace(-2, 2, 9)[:, None]
    for name in ["poly3", "sin", "tanh2", "logistic"]:
        model = get_forward_model(name)
        np.testing.assert_array_equal(model.jacobian(f)[:, :, 0], model.derivative(f))


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(["poly3", "exp", "sin", "tanh2", "logistic"]),
       f=hnp.arrays(float, st.integers(1, 8), elements=st.floats(-6, 6)))
def test_scalar_derivatives_match_central_differences_anywhere(name, f):
    model = get_forward_model(name)
    h = 1e-6 * np.maximum(1.0, np.abs(f))
    numeric = (model.value(f + h) - model.value(f - h)) / (2 * h)
    scale = np.abs(model.value(f)) + 1.0
    np.testing.assert_allclose(model.derivative(f), numeric, rtol=1e-6, atol=1e-7 * scale.max())


def test_sign_cubic_refuses_taylor_and_names_the_alternative():
    model = get_forward_model("sign_cubic")
    assert model.differentiable is False
    for call in (model.jacobian, model.derivative):
        with pytest.raises(ValueError, match="UGP / UKS"):
            call(np.ones((3, 1)))


def test_logistic_and_tanh2_are_stable_in_the_tails():
    f = np.array([[-800.0], [-40.0], [0.0], [40.0], [800.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = get_forward_model("logistic").value(f)[:, 0]
        ds = get_forward_model("logistic").derivative(f)[:, 0]
        dt = get_forward_model("tanh2").derivative(f)[:, 0]
        e = get_forward_model("exp").value(np.array([1000.0]))
    np.testing.assert_allclose(s, [0.0, np.exp(-40.0) / (1 + np.exp(-40.0)), 0.5, 1 / (1 + np.exp(-40.0)), 1.0],
                               rtol=1e-14)
    # the tail derivative keeps its relative accuracy (1 - s would round to 0 at f = 40)
    np.testing.assert_allclose(ds[1], np.exp(-40.0) / (1 + np.exp(-40.0)) ** 2, rtol=1e-12)
    assert ds[0] == ds[-1] == 0.0 and ds[2] == 0.25
    np.testing.assert_allclose(dt[1], 2 / np.cosh(80.0) ** 2, rtol=1e-12)
    assert np.isposinf(e[0])


def test_softmax_is_stable_normalised_and_shift_invariant():
    rng = np.random.default_rng(3)
    model = get_forward_model("softmax", n_classes=5)
    F = rng.normal(size=(20, 5))
    naive = np.exp(F) / np.exp(F).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(model.value(F), naive, rtol=1e-13)
    np.testing.assert_allclose(model.value(F + 900.0), naive, rtol=1e-12)
    np.testing.assert_allclose(model.value(F).sum(axis=1), 1.0, rtol=1e-15)
    # the Jacobian of a shift-invariant map annihilates the all-ones direction
    np.testing.assert_allclose(model.jacobian(F) @ np.ones(5), 0.0, atol=1e-15)
    with pytest.raises(ValueError, match=r"shape \(N, 5\)"):
        model.value(F[:, :3])


def test_seismic_matches_the_recursion_of_eq38_with_clipping():
    rng = np.random.default_rng(4)
    model = Seismic(n_layers=4)
    assert (model.n_latent, model.n_outputs) == (8, 4)
    for clipped_layer in (None, 2, 3):
        F = seismic_latents(rng, 30, 4, clipped_layer)
        np.testing.assert_allclose(model.value(F), seismic_reference(F[:, :4], F[:, 4:]), rtol=1e-14)
    # cascading clip: a shallow layer 1 must not let layer 2 go above layer 0
    F = np.array([[5.0, 1.0, 3.0, 6.0, 1.0, 2.0, 3.0, 4.0]])
    np.testing.assert_allclose(model.clipped_depths(F), [[5.0, 5.0, 5.0, 6.0]])
    np.testing.assert_allclose(model.value(F), [[10.0, 10.0, 10.0, 10.5]])


@pytest.mark.parametrize("clipped_layer", [1, 2])
def test_seismic_jacobian_with_active_clipping(clipped_layer):
    rng = np.random.default_rng(5 + clipped_layer)
    model = Seismic(n_layers=3)
    F = seismic_latents(rng, 20, 3, clipped_layer)
    J = model.jacobian(F)
    np.testing.assert_allclose(J, central_difference_jacobian(model, F), rtol=1e-7, atol=1e-9)
    assert np.all(J[:, :, clipped_layer] == 0.0)  # a clipped depth has no influence


def test_seismic_offsets_shift_the_latents():
    rng = np.random.default_rng(6)
    offsets = dict(depth_offset=[1.0, 2.0], velocity_offset=2.5)
    model = get_forward_model("seismic", n_layers=2, **offsets)
    F = rng.normal(scale=0.1, size=(10, 4))
    shifted = F + np.array([1.0, 2.0, 2.5, 2.5])
    np.testing.assert_allclose(model.value(F), Seismic(n_layers=2).value(shifted), rtol=1e-14)
    np.testing.assert_allclose(model.jacobian(F), Seismic(n_layers=2).jacobian(shifted), rtol=1e-14)


def test_get_forward_model_names_aliases_instances_and_errors():
    model = Softmax(n_classes=3)
    assert get_forward_model(model) is model
    assert get_forward_model(" SIN ").name == "sin"
    assert get_forward_model("sigmoid").name == "logistic"
    assert get_forward_model("softmax", n_classes=7).n_latent == 7
    assert get_forward_model("seismic", n_layers=2).n_latent == 4
    with pytest.raises(ValueError, match=r"unknown forward model 'expo' \(did you mean 'exp'\?\)"):
        get_forward_model("expo")
    with pytest.raises(ValueError, match="does not accept the options"):
        get_forward_model("sin", n_classes=3)
    with pytest.raises(ValueError, match="n_classes"):
        get_forward_model("softmax", n_classes=1)
    with pytest.raises(ValueError, match="n_layers"):
        get_forward_model("seismic", n_layers=0)
    with pytest.raises(ValueError, match="cannot be applied"):
        get_forward_model(model, n_classes=4)
    with pytest.raises(ValueError, match="name, an expression"):
        get_forward_model(3.0)
    with pytest.raises(ValueError, match="NaN or inf"):
        get_forward_model("sin").value(np.array([[np.nan]]))
    with pytest.raises(ValueError, match=r"shape \(N, 6\)"):
        get_forward_model("seismic", n_layers=3).jacobian(np.ones((2, 5)))


def test_expression_model_values_and_numerical_derivative():
    rng = np.random.default_rng(7)
    f = rng.uniform(-3, 3, size=(40, 1))
    model = get_forward_model("exp(-f**2/2) + sin(f)")
    assert isinstance(model, ExpressionForwardModel) and model.differentiable
    np.testing.assert_allclose(model.value(f), np.exp(-f ** 2 / 2) + np.sin(f), rtol=1e-14)
    exact = -f * np.exp(-f ** 2 / 2) + np.cos(f)
    np.testing.assert_allclose(model.jacobian(f)[:, :, 0], exact, rtol=0, atol=1e-9)
    # the step scales with |f|: relative accuracy holds far from the origin too
    big = np.array([[300.0], [-250.0]])
    np.testing.assert_allclose(get_forward_model("f**3").derivative(big), 3 * big ** 2, rtol=1e-9)


def test_expression_with_sign_behaves_like_sign_cubic_and_refuses_taylor():
    f = np.linspace(-2, 2, 11)[:, None]
    model = get_forward_model("2*sign(f) + f^3")
    np.testing.assert_array_equal(model.value(f), get_forward_model("sign_cubic").value(f))
    assert model.differentiable is False
    with pytest.raises(ValueError, match="uses sign.*unscented"):
        model.jacobian(f)
    for kinked in ["abs(f)", "maximum(f, 0)", "floor(f)"]:
        assert get_forward_model(kinked).differentiable is False


def test_expression_model_refuses_nowhere_finite_and_unsafe_text():
    with pytest.raises(ValueError, match="not finite anywhere"):
        get_forward_model("log(-1 - f**2)")
    with pytest.raises(ValueError, match="__import__"):
        get_forward_model("__import__('os')")
    with pytest.raises(ValueError, match="takes no options"):
        get_forward_model("sin(f) + f", n_classes=2)
