"""The black-box lab without a browser: settings -> lab state, every data set / likelihood /
posterior combination, a fit filling every view, bad uploads, session isolation."""

from __future__ import annotations

import json

import numpy as np
import pytest
from bokeh.models import ColumnDataSource

from gpexplorer.ui.black_box import data
from gpexplorer.variational import comparison
from gpexplorer.ui.black_box import settings as cfg
from gpexplorer.ui.black_box.lab import BlackBoxLab

FAST = {"rounds": 1, "evals_per_block": 4, "M": 6, "n_bins": 40, "n_train": 40}


def finish(lab):
    """Wait for the lab's job and apply its result (a served page polls; here we do)."""
    while lab.job is not None and lab.job.state == "running":
        lab.job.join(60)
        lab.poll_job()
    lab.poll_job()


def make_lab(**values):
    lab = BlackBoxLab()
    if values:  # the default fit (up to 30 rounds per posterior) is not what these tests look at
        lab.cancel_job()
    finish(lab)
    if values:
        lab.settings.param.update(**values)
        finish(lab)
    return lab


def lengths(figure):
    return {key: len(next(iter(src.data.values()))) for key, src in figure.sources.items()}


@pytest.fixture(scope="module")
def lab():
    return make_lab(**FAST)


def test_settings_drive_the_lab_state(lab):
    assert lab.problem.name == "coal" and lab.problem.X.shape == (40, 1)
    assert lab.problem.options["offset"] == pytest.approx(np.log(191 / 40))
    assert "811 bins of 50 days" in lab.note_pane.object
    assert lab.settings.param.n_bins.precedence > 0 and lab.settings.param.n_train.precedence < 0
    assert set(cfg.url_parameters()) >= {"dataset", "posteriors", "estimator", "control_variate", "M"}
    state = json.loads(lab._state_json().getvalue())
    assert state["settings"]["n_bins"] == 40 and set(state["metrics"]) == {"fg", "mog1", "mog2"}


def test_a_fit_fills_every_view(lab):
    assert lab.job.state == "done" and 'data-state="done"' in lab.status.object
    for p in ("fg", "mog1", "mog2"):
        r = lab.results[p]
        assert r.error is None and np.all(np.isfinite(r.f_mean)) and r.metrics["nlpd"] > 0
        assert len(lab.latent.sources[p].data["x"]) == data.GRID_POINTS
        assert len(lab.observation.sources[p].data["x"]) == data.GRID_POINTS
        assert len(lab.elbo.sources[p].data["iteration"]) > 2
        elbo = lab.elbo.sources[p].data
        parts = np.add(np.add(elbo["ell"], elbo["entropy"]), elbo["cross"])
        np.testing.assert_allclose(parts, elbo["elbo"], rtol=1e-8, atol=1e-8)  # the three terms sum to the ELBO
    assert lengths(lab.components) == {("fg", 0): 6, ("mog1", 0): 6, ("mog2", 0): 6, ("mog2", 1): 6}
    assert all(n >= 5 for n in lengths(lab.variance).values())
    score, cv = (lab.variance.sources[k].data["dmean"] for k in ("score", "score+cv"))
    assert np.mean(cv) < np.mean(score)  # the control variate lowers the variance
    assert lab.variance.current.location == lab.settings.num_samples
    assert lab.metrics_readout.object.count("data-posterior=") == 3 and 'data-stale="false"' in lab.metrics_readout.object
    assert len(lab.observation.data.data["x"]) == 40


def test_bands_are_the_mixtures_own_quantiles(lab):
    """The latent band is q(f*)'s 2.5-97.5 % and the coal intensity band exp of its 5-95 %, the
    mixture's quantiles (MoG2 included), not those of a moment-matched Gaussian."""
    from gpexplorer.variational.prediction import mixture_quantiles
    grid = lab.problem.grid[:, None]
    for p in ("fg", "mog1", "mog2"):
        r, src = lab.results[p], lab.latent.sources[p].data
        pi, means, var = r.model.predict_components(grid)
        q = mixture_quantiles(pi, means[:, :, 0], var[:, :, 0], (0.025, 0.975, 0.05, 0.95))
        np.testing.assert_allclose(src["lower"], q[:, 0], rtol=1e-9)
        np.testing.assert_allclose(src["upper"], q[:, 1], rtol=1e-9)
        ratio = np.asarray(lab.observation.sources[p].data["upper"]) / np.exp(q[:, 3])
        np.testing.assert_allclose(ratio, ratio[0], rtol=1e-9)  # exp(95 % quantile of f) times a constant
        if p != "mog2":  # one Gaussian: the band is mean +- 1.96 sd
            np.testing.assert_allclose(src["upper"], r.f_mean + 1.959963984540054 * np.sqrt(r.f_var), rtol=1e-6,
                                       atol=1e-9)


def test_the_elbo_chart_range_skips_a_far_start_but_keeps_the_optimisation():
    from gpexplorer.ui.black_box.charts import MIN_SPAN, y_range_points
    far = {"iteration": list(range(8)), "elbo": [-3e5, -1e4, -300.0, -120.0, -100.0, -90.0, -89.0, -88.5]}
    near = {"iteration": list(range(5)), "elbo": [-110.0, -95.0, -90.0, -87.0, -86.0]}
    kept = y_range_points([far, near, {"iteration": [], "elbo": []}])
    # best final -86, lowest point of a second half -100: the range reaches 4 x 14 = 56 nats below
    assert sorted(kept["elbo"])[:2] == [-120.0, -110.0] and len(kept["elbo"]) == 10
    flat = y_range_points([{"iteration": [0, 1, 2], "elbo": [-500.0, -50.0, -50.0]}])
    assert flat["elbo"] == [-50.0, -50.0] and MIN_SPAN > 0  # a converged trace still gets MIN_SPAN of room
    assert y_range_points([]) == {"iteration": [], "elbo": []}


def test_unticking_a_posterior_hides_it_at_once_and_ticking_fits_only_it():
    lab = make_lab(**FAST)
    fg_trace = list(lab.elbo.sources["fg"].data["elbo"])
    assert fg_trace == lab.results["fg"].trace["elbo"]
    lab.settings.posteriors = ["fg", "mog2"]
    assert lab.job.state == "done"  # no new fit for hiding one
    assert len(lab.latent.sources["mog1"].data["x"]) == 0 and len(lab.elbo.sources["mog1"].data["elbo"]) == 0
    lab.settings.posteriors = ["fg", "mog1"]  # mog1 fitted already: shown again without a fit
    assert len(lab.latent.sources["mog1"].data["x"]) == data.GRID_POINTS
    lab.results.pop("mog2")
    lab.settings.posteriors = ["fg", "mog1", "mog2"]
    assert lab.job.state == "running" or lab.job.state == "done"
    finish(lab)
    assert "fitted MoG2 in" in lab.status.object
    assert list(lab.elbo.sources["fg"].data["elbo"]) == fg_trace  # FG was not fitted again


@pytest.mark.parametrize("dataset", ["coal", "cancer", "toy_binary", "toy_gaussian"])
@pytest.mark.parametrize("posterior", ["fg", "mog1", "mog2"])
@pytest.mark.parametrize("estimator", ["score", "reparam", "quadrature"])
def test_every_dataset_posterior_and_estimator_fits(dataset, posterior, estimator):
    s = cfg.BlackBoxSettings(dataset=dataset, estimator=estimator, **FAST)
    problem = data.load(dataset, s.n_bins, s.n_train, s.data_seed)
    r = comparison.fit_one(problem, posterior, cfg.fit_options(s, problem))
    assert r.error is None, r.error
    n = len(problem.grid) if problem.one_d else len(problem.X_test)
    assert r.f_mean.shape == (n,) and all(np.all(np.isfinite(r.obs[k])) for k in ("mean", "lower", "upper"))
    assert len(r.components) == (2 if posterior == "mog2" else 1)
    assert ("error_rate" in r.metrics) == (problem.kind == "binary")


@pytest.mark.parametrize("likelihood", ["gaussian", "bernoulli_probit", "poisson", "warped_gaussian"])
def test_other_likelihoods_fit_or_say_why_not(likelihood):
    dataset = {"gaussian": "toy_gaussian", "bernoulli_probit": "toy_binary", "poisson": "coal",
               "warped_gaussian": "toy_gaussian"}[likelihood]
    s = cfg.BlackBoxSettings(dataset=dataset, likelihood=likelihood, **FAST)
    problem = data.load(dataset, s.n_bins, s.n_train, s.data_seed)
    r = comparison.fit_one(problem, "fg", cfg.fit_options(s, problem))
    if likelihood == "warped_gaussian" and r.error is not None:  # needs positive targets
        assert "warped" in r.error.lower() or "positive" in r.error.lower()
    else:
        assert r.error is None, r.error
    wrong = comparison.fit_one(data.load("toy_gaussian", n_train=30), "fg",
                         cfg.fit_options(cfg.BlackBoxSettings(likelihood="poisson", **FAST),
                                         data.load("toy_gaussian", n_train=30)))
    assert wrong.error is not None and "poisson" in wrong.error  # shown in the metrics table


def test_a_likelihood_that_does_not_fit_the_data_is_reported_in_the_page():
    lab = make_lab(**FAST, likelihood="poisson", dataset="toy_gaussian")
    assert lab.results["fg"].error is not None
    assert "failed" in lab.metrics_readout.object and "poisson" in lab.metrics_readout.object
    assert "failed (see the metrics table)" in lab.status.object


@pytest.mark.parametrize("contents, message", [
    (b"", "empty"),
    (b"x,y\n1,2\n2,abc\n3,4\n4,5\n5,6\n", "abc"),
    (b"x,y\n1,2\n", "at least 2"),
    (b"x,y\n1,2\n2,3\n3,4\n", "at least 5"),
    ("x,y\n" + "".join(f"{i},{1e200}\n" for i in range(6)), "overflow"),
])
def test_bad_uploads_are_answered(contents, message):
    lab = make_lab(**FAST)
    lab.upload.filename = "bad.csv"
    lab.upload.value = contents.encode() if isinstance(contents, str) else contents
    assert lab.upload_message.visible and "upload-error" in lab.upload_message.object
    assert message in lab.upload_message.object
    assert lab.settings.dataset == "coal" and lab.problem.name == "coal"


def test_a_good_upload_becomes_the_dataset():
    lab = make_lab(**FAST)
    text = "a,b,label\n" + "".join(f"{np.sin(i)},{np.cos(i)},{i % 2}\n" for i in range(30))
    lab.upload.filename = "two.csv"
    lab.upload.value = text.encode()
    finish(lab)
    assert "upload-ok" in lab.upload_message.object and lab.settings.dataset == "upload"
    assert lab.problem.kind == "binary" and not lab.problem.one_d and lab.problem.X.shape == (24, 2)
    assert all(r.error is None for r in lab.results.values())
    assert len(lab.latent.sources["fg"].data["x"]) == 6  # the held-out 20 %


def test_upload_without_a_file_says_so():
    lab = make_lab(**FAST)
    lab.settings.dataset = "upload"
    assert "no CSV uploaded yet" in lab.badge_pane.object
    assert lab.problem.name == "coal"  # the previous data set stays


def test_cancel_stops_the_fit_and_keeps_no_result():
    lab = make_lab(**FAST)
    lab.settings.param.update(rounds=40, evals_per_block=40, estimator="quadrature")
    assert lab.job.state == "running"
    lab.cancel_job()
    finish(lab)
    assert lab.job.state == "cancelled" and 'data-state="cancelled"' in lab.status.object
    assert not lab.fit_button.disabled and lab.cancel_button.disabled


def test_two_labs_share_no_state_and_no_bokeh_model():
    a, b = make_lab(**FAST), make_lab(**FAST)
    b.settings.posteriors = ["fg"]
    assert a.settings.posteriors == ["fg", "mog1", "mog2"]
    assert a.settings is not b.settings and a.results is not b.results and a.jobs is not b.jobs
    models_a = {id(m) for fig in (a.latent, a.observation, a.components, a.elbo, a.variance)
                for m in fig.figure.references()}
    models_b = {id(m) for fig in (b.latent, b.observation, b.components, b.elbo, b.variance)
                for m in fig.figure.references()}
    assert not models_a & models_b
    sources = [m for fig in (a.latent, a.elbo) for m in fig.figure.references() if isinstance(m, ColumnDataSource)]
    assert sources and all(id(s) not in models_b for s in sources)
    assert len(a.latent.sources["mog1"].data["x"]) == data.GRID_POINTS  # b's change did not reach a


def test_mog1_stays_visible_under_a_mog2_that_collapsed_onto_it_and_each_band_has_edges():
    """MoG2 often puts one weight near zero and lies on MoG1 (issue 23: blue hidden under green):
    MoG1's mean is a wide pale line drawn first; every band has its own edge lines."""
    from gpexplorer.ui.black_box.figures import LatentFigure

    fig = LatentFigure().figure
    lines = [r for r in fig.renderers if type(r.glyph).__name__ == "Line" and r.glyph.y == "mean"]
    by_name = {r.data_source.name: r.glyph for r in lines}
    assert by_name["latent-mog1"].line_width >= 3 * by_name["latent-mog2"].line_width
    assert [r.data_source.name for r in lines].index("latent-mog1") < [r.data_source.name for r in lines].index("latent-mog2")
    for p in ("fg", "mog1", "mog2"):
        edges = [r for r in fig.renderers if type(r.glyph).__name__ == "Line" and r.data_source.name == f"latent-{p}"
                 and r.glyph.y in ("lower", "upper")]
        assert len(edges) == 2


def test_a_typed_likelihood_on_counts_is_drawn_as_counts_per_bin_and_an_unnormalised_one_gets_a_badge():
    """Issue 23: with a typed likelihood on coal the observation chart said "intensity per year"
    while it drew the predictive of counts per bin; an unnormalised likelihood was noted only in the
    status line, which presenter mode folds away."""
    lab = make_lab(**FAST, posteriors=["fg"], estimator="quadrature", likelihood="expression",
                   log_likelihood="y*f - exp(f) - gammaln(y + 1)")
    title = lab.observation.figure.title.text
    assert "count per bin" in title and "Intensity" not in title
    assert lab.observation.figure.yaxis.axis_label == "count per bin"
    assert list(lab.observation.data.data["y"]) == list(lab.problem.Y[:, 0])  # counts, not divided by the bin width
    assert 'data-kind="unnormalised"' not in lab.badge_pane.object
    lab.settings.log_likelihood = "y*f - exp(f)"
    finish(lab)
    assert 'data-kind="unnormalised"' in lab.badge_pane.object and "Not a probability" in lab.badge_pane.object
    lab.settings.likelihood = "auto"
    finish(lab)
    assert "Intensity" in lab.observation.figure.title.text and 'data-kind="unnormalised"' not in lab.badge_pane.object


def test_the_metrics_table_shows_each_fits_learnt_kernel(lab):
    """Lesson 7 explains MoG1's band by the shorter lengthscale it learns: the table shows it."""
    table = lab.metrics_readout.object
    assert "<th>lengthscale</th>" in table and "<th>kernel var.</th>" in table
    for p in ("fg", "mog1", "mog2"):
        learnt = lab.results[p].model.kernels[0].parameters["lengthscale"]
        assert lab.results[p].metrics["lengthscale"] == pytest.approx(float(np.ravel(learnt)[0]))
