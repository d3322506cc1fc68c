"""The sparse lab with inter-domain inducing features (issue 15), without a browser: every
feature type builds, every view is filled, the sliders edit the selected feature, a drag moves
one feature, the position sweep runs, and the near-duplicate badge appears."""

from __future__ import annotations

import numpy as np
import pytest

from gpexplorer import inducing
from gpexplorer.ui import SparseRegressionLab
from gpexplorer.ui.sparse import features as lab_features

AVAILABLE = [k for k in lab_features.feature_choices().values() if k in inducing.FEATURES]


@pytest.fixture
def lab():
    return SparseRegressionLab()


def _errors(lab):
    return {n: r.error for n, r in lab.comparison.results.items() if r.error}


@pytest.mark.parametrize("kind", AVAILABLE)
def test_every_feature_type_fills_every_view(lab, kind):
    lab.settings.param.update(feature=kind, M=6)
    assert lab_features.kind_of(lab.feature) == kind and len(lab.feature) == 6
    assert not _errors(lab)
    # the strip: one basis-function curve per feature, finite, on the posterior's grid
    ys = lab.strip.curves.data["ys"]
    assert len(ys) == 6 and all(np.all(np.isfinite(y)) for y in ys)
    assert len(lab.posterior.inducing.data["x"]) == (0 if kind == "frequency" else 6)
    for tab in ("split", "add_one", "position", "trace"):
        lab.view_tab = tab
    assert len(lab.split.source.data["x"]) > 0
    if kind != "frequency":
        assert lab.position_chart.sources[0].data["x"].size == 120
        assert np.isfinite(lab.position_chart.sources[1].data["bound"]).any()
        assert len(lab.add_one.series.source.data["xs"]) > 0


def test_the_sliders_edit_the_selected_feature_and_follow_the_selection(lab):
    lab.settings.param.update(feature="time-frequency", M=5)
    before = lab.comparison.results["vfe"].log_evidence
    lab.settings.selected_feature = 2
    lab.settings.feature_frequency = 3.5
    assert lab.feature.omega[2, 0] == 3.5 and lab.feature.omega[1, 0] != 3.5
    assert lab.comparison.results["vfe"].log_evidence != before  # every objective recomputed
    lab.settings.selected_feature = 1  # the slider shows the newly selected feature's own value
    assert lab.settings.feature_frequency == pytest.approx(lab.feature.omega[1, 0])
    lab.settings.feature_width = 0.7  # time-frequency features share their width
    np.testing.assert_allclose(lab.feature.delta, 0.7)


def test_a_drag_moves_one_feature_and_keeps_its_parameters(lab):
    lab.settings.param.update(feature="time-frequency", M=4, feature_frequency=2.0)
    omega = lab.feature.omega.copy()
    x = list(lab.posterior.inducing.data["x"])
    x[1] += 0.5
    lab.posterior.inducing.data = {**lab.posterior.inducing.data, "x": x}  # what a browser drag sends
    assert lab.feature.mu[1, 0] == pytest.approx(x[1], abs=1e-6)
    np.testing.assert_array_equal(lab.feature.omega, omega)


def test_a_kernel_without_closed_forms_is_refused_with_a_reason(lab):
    lab.settings.feature = "time-frequency"
    lab.settings.kernel = "matern32"
    assert "no covariances with the matern 3/2 kernel" in lab.badge_pane.object and "Squared exponential" in lab.badge_pane.object


def test_optimise_fits_the_feature_parameters(lab):
    lab.settings.param.update(feature="time-frequency", M=5, max_iter=30)
    start = lab.feature.copy()
    lab.start_fit()
    assert lab.job.join(120) == "done"
    lab.poll_job()
    assert type(lab.feature).__name__ == "TimeFrequency"
    assert not np.allclose(lab.feature.omega, start.omega) or not np.allclose(lab.feature.mu, start.mu)
    lab.replay = 0  # replay shows the start again
    assert lab.mode == "fitted"


def test_near_coincident_features_get_a_badge():
    lab = SparseRegressionLab()
    lab.settings.param.update(feature="time-frequency", M=3, feature_frequency=0.0)
    z = [1.0, 3.0, 3.0005]
    lab.settings.inducing_inputs = z
    assert "Near-duplicate features" in lab.badge_pane.object


def test_dragging_one_delta_of_a_sum_moves_that_delta_only(lab):
    lab.settings.param.update(feature="sum-of-deltas", M=3, C=3)
    before = lab.feature.Z.copy()
    bound = lab.comparison.results["vfe"].log_evidence
    data = dict(lab.strip.deltas.data)
    assert len(data["x"]) == 9  # one handle per delta
    x = np.array(data["x"], dtype=float)
    x[4] += 0.3
    lab.strip.deltas.data = {**data, "x": x}  # what a browser drag of that handle sends
    m, c = int(data["member"][4]), int(data["delta"][4])
    assert lab.feature.Z[m, c, 0] == pytest.approx(before[m, c, 0] + 0.3)
    changed = np.argwhere(lab.feature.Z != before)
    assert changed.tolist() == [[m, c, 0]]
    assert lab.comparison.results["vfe"].log_evidence != bound


def test_two_sessions_share_no_bokeh_model_in_the_strip():
    """A module-level colour mapper once joined every session's document: Bokeh refused to
    serialise the second page (a model belongs to one document)."""
    a, b = SparseRegressionLab(), SparseRegressionLab()
    ids_a = {m.id for m in a.strip.figure.references()}
    ids_b = {m.id for m in b.strip.figure.references()}
    shared = {m for m in a.strip.figure.references() if m.id in ids_b}
    assert not ids_a & ids_b, shared


def test_the_kuu_jitter_setting_reaches_every_evaluation_and_the_fit(lab):
    lab.settings.param.update(feature="multiscale", M=3, max_iter=20)
    lab.settings.jitter = 1e-12
    assert all(r.params.jitter == 1e-12 for n, r in lab.comparison.results.items() if n != "exact")
    tiny = lab.comparison.results["vfe"].log_evidence
    lab.settings.jitter = 1e-2
    assert lab.comparison.results["vfe"].log_evidence != tiny  # the bound is evaluated with the new jitter
    lab.start_fit()
    assert lab.wait_for_jobs(120) == "done"
    assert lab.fits["vfe"].final.jitter == 1e-2 and lab.fits["vfe"].trace[-1].jitter == 1e-2


def test_the_position_zoom_is_around_the_selected_feature_and_holds_its_own_place(lab):
    lab.settings.param.update(feature="multiscale", M=3, selected_feature=1)
    lab.view_tab = "position"
    here = float(lab.feature.locations[1, 0])
    zoom = np.asarray(lab.position_chart.sources[1].data["x"])
    assert zoom.min() < here < zoom.max() and np.min(np.abs(zoom - here)) == 0.0
