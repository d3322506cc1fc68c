"""Issue 23's display bugs of the sparse-regression lab, without a browser (the alignment of the
feature strip and the bands' screenshot are in test_sparse_display_bugs_page.py)."""

from __future__ import annotations

import math
import re
from types import SimpleNamespace

import numpy as np
import pytest

from gpexplorer import datasets, inducing, kernels
from gpexplorer.sparse import comparison
from gpexplorer.sparse.comparison import ApproximationResult, ParameterSet, badges
from gpexplorer.sparse.feature_position import u_correlation
from gpexplorer.sparse.joint_fit import fit_one
from gpexplorer.ui import SparseRegressionLab
from gpexplorer.ui.sparse import features as lab_features
from gpexplorer.ui.sparse import readouts

KINDS = [k for k in lab_features.feature_choices().values() if k in inducing.FEATURES]
#: Okabe & Ito (2008), "Color Universal Design": eight colours told apart with any colour vision
OKABE_ITO = {"#000000", "#e69f00", "#56b4e9", "#009e73", "#f0e442", "#0072b2", "#d55e00", "#cc79a7"}
LONG_NUMBER = re.compile(r"\d{13,}")


@pytest.fixture
def lab():
    return SparseRegressionLab()


def _finish(lab, timeout=120):
    assert lab.job.join(timeout) == "done", lab.job.error
    lab.poll_job()


def _kinds(lab):
    return {(b.kind, b.approximation) for b in lab.comparison.badges}


# 1. samples ----------------------------------------------------------------------------------

def test_samples_are_drawn_on_their_own_grid_and_lie_on_it(lab):
    """Show samples drew 300 values against 100 x values: curves stretched 3x, outside the band."""
    lab.settings.param.update(M=8, approximations=["exact", "vfe"], band="f")
    lab.settings.show_samples = True
    data = lab.posterior.samples.data
    assert len(data["xs"]) == 6  # three samples of each of two approximations
    for xs, ys in zip(data["xs"], data["ys"]):
        assert len(xs) == len(ys)
    inside = []
    for k, name in enumerate(["exact", "vfe"]):
        r = lab.comparison.results[name]
        assert r.samples.shape == (3, len(r.sample_inputs))
        band = lab.posterior.bands[name].data
        for xs, ys in zip(data["xs"][3 * k:3 * k + 3], data["ys"][3 * k:3 * k + 3]):
            np.testing.assert_array_equal(xs, r.sample_inputs[:, 0])  # the grid they were drawn on
            lower = np.interp(xs, band["x"], band["lower"])
            upper = np.interp(xs, band["x"], band["upper"])
            inside.append(np.mean((ys >= lower) & (ys <= upper)))
    assert np.mean(inside) > 0.85, inside  # a 2-sigma band holds about 95 % of a sample's values


# 2. near-duplicate correlations ----------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_u_correlations_are_finite_and_within_one_for_every_feature_type(lab, kind):
    """The frequency features' badge printed a "correlation" of 5.3e133 as a 134-digit number."""
    lab.settings.param.update(feature=kind, M=15)
    for name, r in lab.comparison.results.items():
        assert r.error is None, (name, r.error)
        for i, j, c in r.duplicate_features:
            assert math.isfinite(c) and -1.0 <= c <= 1.0, (name, i, j, c)
    p = lab.comparison.results["vfe"].params
    C = u_correlation(p.inducing, p.kernel)
    assert np.all(np.isfinite(C)) and np.all(np.abs(C) <= 1.0)
    text = lab.badge_pane.object
    assert not LONG_NUMBER.search(text), LONG_NUMBER.search(text).group()


def test_a_feature_with_no_variance_has_a_finite_correlation():
    """A sine at frequency 0 is identically zero: its u has no variance, its correlation is not 0/0."""
    feature = inducing.Frequency(np.array([[0.0], [0.0], [1.0]]), np.array([0.0, -np.pi / 2, 0.0]), 3.0)
    C = u_correlation(feature, kernels.SquaredExponential(1.0, 0.5))
    assert np.all(np.isfinite(C)) and np.all(np.abs(C) <= 1.0)


def test_a_near_duplicate_badge_prints_its_correlation_at_sensible_precision():
    """Seven decimals printed 0.99999999... as "1.0000000": no longer a correlation below 1."""
    lab = SparseRegressionLab()
    lab.settings.param.update(feature="time-frequency", M=3, feature_frequency=0.0)
    lab.settings.inducing_inputs = [1.0, 3.0, 3.0001]
    (_, _, c), = lab.comparison.results["vfe"].duplicate_features
    badge = next(b for b in lab.comparison.badges if b.kind == "near-duplicate")
    printed = re.search(r"2 and 3 \(([-0-9.e+]+)\)", badge.message).group(1)
    assert len(printed) <= 12 and printed != "1.0000000"  # enough digits to tell it from 1, no more
    assert float(printed) == pytest.approx(c, abs=5 * (1 - abs(c)))


# 4. overestimation ---------------------------------------------------------------------------

def _result(name, evidence, exact, upper):
    p = ParameterSet(kernels.SquaredExponential(1.0, 0.5), 0.1, None if name == "exact" else np.zeros((1, 1)))
    r = ApproximationResult(name=name, params=p, log_evidence=evidence, exact_at_params=exact, upper_bound=upper)
    r.condition_number, r.kuu_min_eigenvalue, r.jitter_used = 1.0, 1.0, comparison.BASE_JITTER
    return r


def test_evidence_above_the_exact_log_p_is_flagged_and_above_the_bound_more_strongly():
    exact, upper = -62.3, -40.0
    flagged = {b.kind for b in badges({"fitc": _result("fitc", -51.8, exact, upper)})}
    assert "above-exact" in flagged and "above-upper-bound" not in flagged
    flagged = {b.kind for b in badges({"fitc": _result("fitc", -30.0, exact, upper)})}
    assert "above-upper-bound" in flagged and "above-exact" not in flagged  # the stronger one only
    assert not badges({"fitc": _result("fitc", exact - 0.5, exact, upper)})
    assert not badges({"dtc": _result("dtc", exact + 1e-9, exact, upper)})  # round-off is not overestimation
    assert badges({"dtc": _result("dtc", exact + 0.1, exact, upper)})[0].kind == "above-exact"
    assert not badges({"vfe": _result("vfe", exact + 1e-9, exact, upper)})  # VFE is a lower bound
    message = badges({"fitc": _result("fitc", -51.826, exact, upper)})[0].message
    assert "-51.83" in message and "-62.30" in message


def test_fitc_after_optimise_is_flagged_above_the_exact_and_the_sandwich_agrees(lab):
    """Snelson, M = 15, random Z, seed 0 (the defaults): FITC's optimised evidence is ~10 nats above
    the exact log p(y) at the same parameters, below the upper bound: flagged, nothing for VFE."""
    lab.start_fit()
    _finish(lab)
    fitc, vfe = lab.comparison.results["fitc"], lab.comparison.results["vfe"]
    assert fitc.exact_at_params + 5 < fitc.log_evidence < fitc.upper_bound
    assert ("above-exact", "fitc") in _kinds(lab)
    assert not [b for b in lab.comparison.badges if b.approximation == "vfe" and b.kind.startswith("above")]
    assert vfe.log_evidence <= vfe.exact_at_params + 1e-6
    assert 'data-kind="above-exact"' in lab.badge_pane.object
    assert "Above the exact log p(y)" in lab.badge_pane.object
    ev = lab.sandwich.evidence.data
    line = dict(zip(ev["row"], ev["line"]))
    from gpexplorer.ui.sparse.charts import OVERESTIMATE_OUTLINE
    from gpexplorer.ui.sparse.figures import COLORS
    assert line["FITC"] == OVERESTIMATE_OUTLINE and line["VFE"] == COLORS["vfe"]
    from gpexplorer.ui.sparse.texts import EXPLAIN
    assert "black tick" in EXPLAIN["sandwich"] and "proven" in EXPLAIN["sandwich"]


# 5. bands ------------------------------------------------------------------------------------

def test_bands_have_their_own_edges_in_a_colour_blind_safe_palette(lab):
    from gpexplorer.ui.sparse.figures import COLORS

    assert {c.lower() for c in COLORS.values()} <= OKABE_ITO
    assert len(set(COLORS.values())) == len(COLORS)
    posterior = lab.posterior
    for name in ("exact", "fitc", "vfe"):
        edges = posterior.edges[name]
        assert sorted(r.glyph.y for r in edges) == ["lower", "upper"]
        for r in edges:
            assert r.data_source is posterior.bands[name]
            assert r.glyph.line_color == COLORS[name]
            assert (len(r.glyph.line_dash) > 0) == (name == "exact")  # dashed for the exact GP only
        assert set(edges) <= set(posterior.items[name].renderers)  # the legend entry hides them too
        band = next(r for r in posterior.items[name].renderers if r.glyph.__class__.__name__ == "VArea")
        assert band.glyph.fill_alpha <= 0.12
    assert len(posterior.bands["fitc"].data["lower"]) > 50


# 6. replay -----------------------------------------------------------------------------------

def test_replay_moves_the_triangles_with_the_reference_fit(lab):
    lab.settings.max_iter = 60
    lab.start_fit()
    _finish(lab)
    reference = lab.fits["vfe"]  # the approximation whose optimum is written back
    lab.replay = 0
    np.testing.assert_allclose(lab.posterior.inducing.data["x"], reference.trace[0].Z[:, 0])
    np.testing.assert_allclose(lab.posterior.inducing.data["x"], lab.fit_start.Z[:, 0])
    lab.replay = 20
    np.testing.assert_allclose(lab.posterior.inducing.data["x"], reference.trace[20].Z[:, 0])
    lab.replay = lab.param.replay.bounds[1]
    np.testing.assert_allclose(lab.posterior.inducing.data["x"], reference.final.Z[:, 0])


# 7. labels and numbers -----------------------------------------------------------------------

@pytest.mark.parametrize("value, text", [(8.67e-05, "8.67e-05"), (5.3e133, "5.30e+133"), (-51.826, "-51.83"),
                                         (0.7, "0.700"), (0.0, "0"), (float("nan"), "n/a"), (None, "n/a")])
def test_format_number_by_magnitude(value, text):
    from gpexplorer.formatting import format_number

    assert format_number(value) == text


def test_readouts_label_their_columns_and_format_small_ratios(lab):
    fits = {"exact": SimpleNamespace(final=SimpleNamespace(noise_variance=0.08), n_iter=10),
            "fitc": SimpleNamespace(final=SimpleNamespace(noise_variance=0.08 * 8.67e-05), n_iter=300)}
    noise = readouts.noise_html(lab.comparison, fits)
    assert "8.67e-05" in noise and ">0.00<" not in noise
    bounds = lab.bounds_readout.object
    assert "upper bound, Z optimised" in bounds and "Tighten upper bound" in bounds
    assert lab.terms.figure.yaxis[0].axis_label and lab.terms.figure.xaxis[0].axis_label


# 8. feature-type switch ----------------------------------------------------------------------

def test_a_feature_type_switch_resets_the_status_and_the_replay_slider(lab):
    lab.settings.max_iter = 20
    lab.start_fit()
    _finish(lab)
    assert 'data-state="done"' in lab.status.object and not lab.replay_slider.disabled
    lab.settings.feature = "multiscale"
    assert "fit finished" not in lab.status.object and 'data-state="idle"' in lab.status.object
    assert lab.replay_slider.disabled and lab.replay == 0 and lab.fits is None


def test_time_frequency_features_start_as_wavelets_not_bumps(lab):
    """They started at the previous type's frequency (0 after frequency features) and width: plain bumps."""
    lab.settings.feature = "frequency"  # whose selected member (a constant) sets the frequency slider to 0
    lab.settings.feature = "time-frequency"
    ls = lab.settings.lengthscale
    assert lab.settings.feature_frequency * ls >= 1.0
    np.testing.assert_allclose(lab.feature.omega, lab.settings.feature_frequency)
    for y in lab.strip.curves.data["ys"]:  # each basis function swings well below zero
        assert np.min(y) < -0.2 * np.max(y)


def test_frequency_features_start_on_visible_harmonics(lab):
    lab.settings.feature = "time-frequency"
    lab.settings.feature = "frequency"
    ls, X = lab.settings.lengthscale, lab.dataset.X[:, 0]
    omega = np.abs(lab.feature.omega[:, 0])
    base = lab.settings.feature_frequency
    assert base * (X.max() - X.min()) >= np.pi  # at least half a period across the data
    assert omega.max() * ls <= 3.0  # no harmonic far out in the SE spectrum's tail
    p = lab.comparison.results["vfe"].params
    variance = np.diag(comparison.covariances.Kuu(p.inducing, p.kernel))
    assert variance.min() > 1e-6 * variance.max()  # no member identically zero (a sine at frequency 0)


def test_the_width_does_not_carry_over_between_types(lab):
    ls = lab.settings.lengthscale
    lab.settings.feature = "multiscale"
    assert lab.settings.feature_width == pytest.approx(0.5 * ls)
    lab.settings.feature_width = 2.5
    lab.settings.feature = "time-frequency"
    assert lab.settings.feature_width != 2.5 and lab.feature.delta[0] == pytest.approx(lab.settings.feature_width)
    lab.settings.feature = "multiscale"
    assert lab.settings.feature_width == pytest.approx(0.5 * ls)
    np.testing.assert_allclose(lab.feature.delta, 0.5 * ls)


def test_a_feature_type_from_the_url_starts_from_its_defaults_unless_the_url_says_otherwise(lab):
    ls = lab.settings.lengthscale
    lab.apply_url({"feature": "time-frequency", "feature_width": "0.9"})
    assert lab.settings.feature_width == pytest.approx(0.9)  # the URL's own value stays
    assert lab.settings.feature_frequency * ls >= 1.0  # the type's own start, not the slider's default 1
    np.testing.assert_allclose(lab.feature.omega, lab.settings.feature_frequency)


# 9. convergence ------------------------------------------------------------------------------

def test_fit_outcome_says_whether_the_fit_converged():
    ds = datasets.load("snelson")
    start = ParameterSet(kernels.SquaredExponential(1.0, 0.5), 0.09, ds.X[::20].copy())
    short = fit_one(ds, "vfe", start, max_iter=5)
    assert short.converged is False and math.isfinite(short.last_change) and short.last_change > 0
    assert short.last_change == pytest.approx(np.mean(np.abs(np.diff(short.log_evidence[-11:]))))
    full = fit_one(ds, "vfe", start, max_iter=2000)
    assert full.converged is True


def test_a_fit_stopped_by_its_budget_gets_a_badge_and_continues(lab):
    from gpexplorer.formatting import format_number

    lab.settings.max_iter = 5
    lab.start_fit()
    _finish(lab)
    for name in ("fitc", "vfe"):
        assert ("not-converged", name) in {(b.kind, b.approximation) for b in lab.fit_badges()}
    html = lab.badge_pane.object
    assert 'data-kind="not-converged"' in html and "Continue" in html
    assert format_number(lab.fits["vfe"].last_change) in html
    assert not lab.continue_button.disabled
    before = {n: len(o.trace) for n, o in lab.fits.items()}
    lab.start_continue()
    _finish(lab)
    for name, o in lab.fits.items():
        assert len(o.trace) > before[name]  # the trace extends where the fit stopped
    assert len(lab.trace.objective.get("VFE")[0]) == len(lab.fits["vfe"].trace)
    assert lab.param.replay.bounds[1] == max(len(o.trace) for o in lab.fits.values()) - 1


def test_a_converged_fit_gets_no_convergence_badge(lab):
    lab.settings.param.update(max_iter=2000, approximations=["exact", "vfe"])
    lab.start_fit()
    _finish(lab)
    assert all(o.converged for o in lab.fits.values())
    assert 'data-kind="not-converged"' not in lab.badge_pane.object
    assert lab.continue_button.disabled
