"""The patches lab (apps/convolutional.py) without a browser: the lab object's state changes and
its numbers, and the library calls behind them (gpexplorer.convolutional_views / _fits).

Small settings throughout (60 rectangles, M = 10, a few iterations): the lab fits in the
background as served, and each test waits for its jobs as the page's polling would.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpexplorer import convolutional_fits as fits
from gpexplorer import convolutional_views as views
from gpexplorer.kernels.patch_layout import PatchLayout
from gpexplorer.ui.convolutional import quantities
from gpexplorer.ui.convolutional.digits import DigitPanel
from gpexplorer.ui.convolutional.lab import ConvolutionalLab

SMALL = {"n_train": 60, "M": 10, "iterations": 4}
DIGITS = {"n_train": 150, "M": 8, "steps": 30}


def fitted_lab(**settings):
    lab = ConvolutionalLab()  # starts fitting the default settings: cancelled by the update
    lab.settings.param.update(**{**SMALL, **settings})
    lab.wait_for_jobs(300)
    assert lab.outcome is not None and lab.outcome.error is None, lab.status.object
    return lab


@pytest.fixture(scope="module")
def lab():
    return fitted_lab()


def source_data(fig_source):
    return {k: np.asarray(v) for k, v in fig_source.data.items()}


# --- the library ------------------------------------------------------------------------------
def test_patch_counts_are_the_number_of_patches_over_each_pixel():
    counts = views.patch_counts(PatchLayout((28, 28), (3, 3)))
    assert counts[0, 0] == 1 and counts[0, 1] == 2 and counts[14, 0] == 3 and counts[14, 14] == 9
    assert counts.sum() == 26 * 26 * 9  # every patch covers 9 pixels
    assert views.patch_counts(PatchLayout((14, 14), (5, 5)))[7, 7] == 25


def test_the_rectangles_hold_45_unique_patches_and_bars_sit_in_fewer_patches_at_the_edge():
    problem = fits.load_problem("rectangles", 200)
    model = fits.build_model(problem, "conv", 5, 3)
    assert views.unique_patch_count(model.kernels[0], problem.X) == 45
    bars = views.bar_images((28, 28))
    assert bars.shape == (28, 784) and bars[0].reshape(28, 28)[7:21, 0].all() and bars[0].sum() == 14


def test_contributions_sum_to_the_latent_mean_and_tiles_follow_q(lab):
    model, problem = lab.outcome.model, lab.problem
    for k in (0, 5):
        c = views.contributions(model, problem.X_test[k])
        assert c.shape == (26, 26)
        mean, _ = model.predict_f(problem.X_test[k:k + 1])
        assert c.sum() == pytest.approx(mean[0, 0], abs=1e-8)
    tiles = views.inducing_tiles(model)
    assert tiles["patches"].shape == (10, 3, 3)
    assert np.all(np.diff(tiles["mean"][tiles["order"]]) >= 0)
    assert np.array_equal(tiles["mean"], model.posterior.means[0][0])


def test_moving_an_inducing_patch_carries_q_over_and_bad_patches_leave_the_model_as_it_was(lab):
    model = lab.outcome.model
    before = model.parameters
    try:
        Z = model.features[0].Z
        patch = Z[2].copy()
        patch[4] = 1.0 - patch[4]
        carried = views.move_inducing_patch(model, 2, patch, q_steps=0)
        model.set_parameters(**before)
        stepped = views.move_inducing_patch(model, 2, patch, q_steps=2)
        assert np.isfinite(carried) and stepped >= carried - 1e-6  # natural-gradient steps never lose ELBO
        assert model.features[0].Z[2, 4] == patch[4]
        model.set_parameters(**before)
        for index, bad in ((10, patch), (-1, patch), (2, patch[:5]), (2, np.full(9, np.nan)), (True, patch),
                           (2, np.full(9, 1e9))):
            with pytest.raises(ValueError, match="index|patch"):
                views.move_inducing_patch(model, index, bad)
            assert all(np.array_equal(np.asarray(before[n]), np.asarray(v)) for n, v in model.parameters.items())
    finally:
        model.set_parameters(**before)


def test_pooling_and_centring_a_drawing():
    img = np.zeros((28, 28))
    img[2:10, 2:4] = 1.0  # a stroke in the top-left corner
    centred = views.centre_by_mass(img.ravel(), 28).reshape(28, 28)
    rows, cols = np.nonzero(centred)
    assert abs(rows.mean() - 13.5) <= 1 and abs(cols.mean() - 13.5) <= 1 and centred.sum() == img.sum()
    assert np.array_equal(views.centre_by_mass(np.zeros(784), 28), np.zeros(784))
    pooled = views.pool_images(img.ravel()[None], 28, 2)
    assert pooled.shape == (1, 196) and pooled.sum() == pytest.approx(img.sum() / 4)
    for bad in ((img.ravel()[None], 28, 3), (img.ravel()[None], 27, 1), (img.ravel()[None], 28, 0)):
        with pytest.raises(ValueError):
            views.pool_images(*bad)


def test_problems_refuse_absurd_settings_by_name():
    with pytest.raises(ValueError, match="n_train"):
        fits.load_problem("rectangles", 10 ** 6)
    with pytest.raises(ValueError, match="side"):
        fits.load_problem("rectangles", 50, side=14)
    with pytest.raises(ValueError, match="dataset"):
        fits.load_problem("cifar", 50)
    with pytest.raises(ValueError, match="kind"):
        fits.build_model(fits.load_problem("rectangles", 50), "rbf", 5)
    assert fits.load_problem("mnist01", 40).side == 14 and fits.load_problem("mnist01", 40, side=28).side == 28


# --- the lab --------------------------------------------------------------------------------
def test_the_fitted_lab_draws_every_view(lab):
    assert len(lab.tiles.src.data["index"]) == 10
    assert len(lab.predictions.now.data["p"]) == 60 and len(lab.predictions.fitted.data["p"]) == 60
    assert len(lab.contributions.heat.data["image"]) == 1 and lab.contributions.heat.data["image"][0].shape == (26, 26)
    assert len(lab.edge.bar.data["column"]) == 28
    assert 'data-state="fitted"' in lab.fit_table.object and "unique patches U" in lab.fit_table.object
    values = quantities.quantities(lab)
    assert values["fitted"] and values["M_used"] == 10 and values["unique_patches"] <= 45
    assert values["contributions.sum"] == pytest.approx(values["f_mean"], abs=1e-8)
    assert (values["edge.corner"], values["edge.edge"], values["edge.centre"]) == (1, 3, 9)
    assert lab.editor.rows == 3 and len(lab.editor.values) == 9 and not lab.editor.locked


def test_an_edit_moves_the_elbo_and_the_predictions_and_undo_restores_them(lab):
    fitted_elbo, fitted_p = lab.current["elbo"], source_data(lab.predictions.now)["p"]
    lab.select_tile(3)  # outside a server the settings' next tick runs at once
    assert lab.settings.tile == 3
    Z = lab.outcome.model.features[0].Z
    assert lab.editor.values == [float(v) for v in Z[3]]
    assert lab.tiles.selected.data["cx"], "the selected tile is outlined"
    values = list(lab.editor.values)
    values[4] = 1.0 - round(values[4])
    lab.edit_patch(values)
    assert lab.edits == 1 and lab.current["elbo"] != fitted_elbo
    assert not np.allclose(source_data(lab.predictions.now)["p"], fitted_p)
    assert 'data-edits="1"' in lab.edit_readout.object and not lab.undo_button.disabled
    assert lab.last_edit_seconds < 2.0
    lab.edit_patch(values)  # the same pixels again: nothing to do
    assert lab.edits == 1
    lab.undo_edits()
    assert lab.edits == 0 and lab.current["elbo"] == pytest.approx(fitted_elbo, abs=1e-9)
    assert np.allclose(source_data(lab.predictions.now)["p"], fitted_p)


def test_bad_editor_values_are_refused_and_the_model_stays(lab):
    elbo = lab.current["elbo"]
    for bad in ([0.0] * 4, [float("nan")] * 9, [1e12] * 9):
        lab.edit_patch(bad)
        assert "refused" in lab.edit_readout.object
        assert lab.current["elbo"] == pytest.approx(elbo, abs=1e-9)
    assert lab.editor.values == [float(v) for v in lab.outcome.model.features[0].Z[lab.settings.tile]]
    lab.edit_message = None


def test_the_contributions_follow_the_chosen_test_image(lab):
    first = lab.current["f_mean"]
    lab.settings.image = 199  # the last of the 200 test images
    assert lab.image_index() == 199 and lab.current["f_mean"] != first
    assert lab.current["f_mean"] == pytest.approx(lab.current["contribution_sum"], abs=1e-8)
    with pytest.raises(ValueError):
        lab.settings.image = 200
    lab.settings.image = 0


def test_edits_while_a_fit_runs_are_undone_on_the_screen_and_a_cancelled_fit_leaves_the_lab_working():
    lab = fitted_lab()
    lab.settings.param.update(M=12, iterations=300)  # a new fit starts (long enough to cancel)
    assert lab.job.state == "running" and lab.editor.locked
    before = list(lab.editor.values)
    lab.edit_patch([1.0 - v for v in before])
    assert lab.editor.values == before
    lab.cancel_job()
    assert lab.wait_for_jobs(120) == "cancelled"
    assert 'data-state="cancelled"' in lab.status.object
    assert not lab.fit_button.disabled and lab.cancel_button.disabled
    lab.request_fit()
    lab.settings.iterations = 3  # cancels that fit and fits again
    lab.wait_for_jobs(300)
    assert lab.outcome.error is None and lab.current is not None and lab.extra["M"] == 12


def test_the_race_fits_four_kernels_and_a_cancelled_race_leaves_no_results(lab):
    lab.settings.iterations = 3
    lab.wait_for_jobs(300)
    lab.request_race()
    assert lab.job.name == "race"
    assert lab.wait_for_jobs(600) == "done"
    assert set(lab.race) == {"se", "conv", "weighted", "weighted+se"}
    assert all(o.error is None for o in lab.race.values()), {k: o.error for k, o in lab.race.items()}
    assert all(n > 0 for n in lab.race_chart.lengths().values())
    values = quantities.quantities(lab)
    assert all(values[f"race.{k}.fitted"] for k in lab.race)
    assert lab.race_table.object.count("data-error-rate") == 4
    lab.request_race()
    lab.cancel_job()
    assert lab.wait_for_jobs(300) == "cancelled"
    assert lab.race == {} and "race cancelled" in lab.status.object


def test_a_bad_data_setting_is_named_in_a_badge_and_the_session_survives():
    lab = ConvolutionalLab()
    lab.apply_url({"n_train": "99999", "M": "abc", "patch": "1"})
    assert "n_train" in lab.url_warning and "M" in lab.url_warning and "patch" in lab.url_warning
    assert "ignored URL values" in lab.badge_pane.object
    lab.settings.param.update(n_train=20, iterations=2, M=4)
    lab.wait_for_jobs(300)
    assert lab.outcome is not None and lab.outcome.error is None


def test_the_digit_panel_classifies_a_drawing_and_ignores_blank_or_broken_ones():
    panel = DigitPanel()
    assert panel.classify([0.0] * 784) is None  # no model yet: nothing to say
    panel.start(DIGITS)
    assert panel.wait_for_jobs(600) == "done", panel.status.object
    assert 'data-state="ready"' in panel.readout.object and 'id="digit-status"' in panel.status.object
    problem = fits.digit_problem(DIGITS["n_train"])
    digit = fits.load_problem("mnist10", 150, side=28, n_test=5).X_test[1]  # a 28 x 28 test digit
    p = panel.classify(list(digit))
    assert p is not None and p.shape == (10,) and p.sum() == pytest.approx(1.0, abs=1e-6)
    assert panel.charts.probs.data["p"][int(np.argmax(p))] == pytest.approx(p.max())
    assert len(panel.charts.seen.data["image"]) == 1 and panel.charts.seen.data["image"][0].shape == (14, 14)
    assert panel.last_seconds < 1.0
    for broken in ([0.0] * 784, [float("nan")] * 784, [1.0] * 10, None):
        assert panel.classify(broken) is None
    assert problem.side == 14
    again = DigitPanel()
    again.start(DIGITS)  # the same options: the process's fitted model, at once
    assert again.wait_for_jobs(60) == "done" and again.outcome is panel.outcome


def test_a_finished_fit_is_reused_by_the_next_page_and_a_changed_setting_fits_again():
    problem = fits.load_problem("rectangles", 40, n_test=20)
    options = {"M": 6, "patch": 3, "init": "unique", "iterations": 3, "seed": 0}
    first = fits.fit_one(problem, "weighted", options, reuse=True)
    calls = []
    again = fits.fit_one(problem, "weighted", options, callback=lambda e: calls.append(e) or False, reuse=True)
    assert calls == [] and again.model is not first.model  # rebuilt from the values, no iteration run
    assert again.metrics == first.metrics and again.trace == first.trace
    assert again.model.elbo() == pytest.approx(first.model.elbo(), rel=1e-12)
    np.testing.assert_array_equal(again.model.predict_y(problem.X_test)[0], first.model.predict_y(problem.X_test)[0])
    again.model.set_parameters(**{"kernel0.base.lengthscale": 3.0})  # a page's edit does not reach the kept fit
    assert fits.fit_one(problem, "weighted", options, reuse=True).model.elbo() == pytest.approx(first.model.elbo())
    changed = fits.fit_one(problem, "weighted", {**options, "M": 7},
                           callback=lambda e: calls.append(e) or False, reuse=True)
    assert calls and len(changed.model.features[0]) == 7
    other = fits.load_problem("rectangles", 41, n_test=20)  # one image more: another problem
    assert fits._fit_key(other, "weighted", options) != fits._fit_key(problem, "weighted", options)
