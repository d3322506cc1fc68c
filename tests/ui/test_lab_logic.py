"""The sparse-regression lab without a browser: settings -> objectives -> data sources."""

import json
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import numpy as np
import panel as pn
import pytest

from gpexplorer.cli import serve_command
from gpexplorer.ui import SparseRegressionLab
from gpexplorer.ui.uploads import MAX_UPLOAD_BYTES
from server_process import free_port, stop_process_group


@pytest.fixture
def lab():
    return SparseRegressionLab()


def _finish(lab, timeout=120):
    assert lab.job.join(timeout) in ("done", "failed", "cancelled")
    lab.poll_job()
    return lab.job.state


def _bounds(lab):
    return {n: r.log_evidence for n, r in lab.comparison.results.items()}


def test_changing_M_changes_the_inducing_markers(lab):
    assert len(lab.posterior.inducing.data["x"]) == 15
    lab.settings.M = 7
    assert len(lab.posterior.inducing.data["x"]) == 7
    assert len(lab.comparison.results["vfe"].params.Z) == 7


def test_hyperparameter_sliders_re_evaluate_every_view(lab):
    before = _bounds(lab)
    band_before = np.array(lab.posterior.bands["vfe"].data["upper"])
    lab.settings.noise_variance = 0.3
    assert all(_bounds(lab)[n] != before[n] for n in before)
    assert not np.allclose(lab.posterior.bands["vfe"].data["upper"], band_before)
    assert "0.3" in lab.noise_readout.object


def test_dragging_an_inducing_input_changes_the_bounds_without_fitting(lab):
    before = lab.bounds_readout.object
    x = list(lab.posterior.inducing.data["x"])
    x[0] = x[0] + 1.0
    lab.posterior.inducing.data = {"x": x, "y": list(lab.posterior.inducing.data["y"])}  # as PointDrawTool does
    assert lab.settings.inducing_inputs[0] == pytest.approx(x[0])
    assert lab.Z[0, 0] == pytest.approx(x[0])
    assert lab.bounds_readout.object != before
    assert lab.job is None  # nothing was optimised


def test_fit_updates_noise_readout_trace_and_replay(lab):
    lab.settings.max_iter = 80
    lab.start_fit()
    assert lab.fit_button.disabled
    assert _finish(lab) == "done"
    assert not lab.fit_button.disabled and lab.mode == "fitted"
    assert "fitted noise" in lab.noise_readout.object
    fits = lab.fits
    assert set(fits) == {"exact", "fitc", "vfe"}
    assert lab.settings.noise_variance == pytest.approx(fits["vfe"].final.noise_variance)  # warm start
    assert len(lab.trace.objective.get("VFE")[1]) == len(fits["vfe"].trace)
    end = list(lab.posterior.fitted.data["x"])
    lab.replay = 0
    start = list(lab.posterior.fitted.data["x"])
    assert start != end
    np.testing.assert_allclose(sorted(start[:15]), sorted(lab.fit_start.Z[:, 0]))
    lab.settings.noise_variance = 0.2  # back to manual mode; fits stay for replay
    assert lab.mode == "manual" and lab.fits is fits


def test_sweep_runs_in_the_background_and_can_be_cancelled(lab):
    lab.settings.sweep_max_M = 6
    lab.settings.max_iter = 40
    lab.start_sweep()
    assert _finish(lab) == "done"
    assert len(lab.sweep_charts.series["nlpd"].get("VFE")[0]) >= 3
    lab.settings.sweep_max_M = 60
    lab.settings.max_iter = 1000
    lab.start_sweep()
    lab.cancel_job()
    assert _finish(lab) == "cancelled"
    assert 'data-state="cancelled"' in lab.status.object


@pytest.mark.parametrize("contents, message", [
    (b"", "empty"),
    (b"x\n1\n2\n3\n", "column"),
    (b"x,y\n1,2\n2,abc\n", "abc"),
    (b"x,y\n1,2\n2,nan\n", "NaN"),
    (b"x,y\n1,2\n", "row"),
    (b"x,y\n" + b"1.0,2.0\n" * 1_000_000, "MB"),
    # issue 14 bug 6: finite, but their squares overflow, and every readout became n/a
    (b"x,y\n1,1e308\n2,-1e308\n3,0\n", "column y has values up to 1e+308"),
    (b"x,y\n1e200,1\n2,0\n3,0\n", "column x has values up to 1e+200"),
])
def test_a_bad_csv_gets_a_message_not_a_traceback(lab, contents, message):
    lab._on_upload(type("E", (), {"new": contents})())
    assert "Upload rejected" in lab.upload_message.object
    assert message.lower() in lab.upload_message.object.lower()
    assert lab.settings.dataset == "snelson"  # the page keeps working on its data


def test_a_good_csv_becomes_the_dataset(lab):
    rows = "\n".join(f"{x:.3f},{np.sin(x):.3f}" for x in np.linspace(0, 5, 40))
    lab._on_upload(type("E", (), {"new": ("x,y\n" + rows).encode()})())
    assert lab.settings.dataset == "upload" and lab.dataset.n == 40
    assert len(lab.posterior.data.data["x"]) == 40


def test_four_dimensional_data_shows_predicted_vs_true(lab):
    lab.settings.dataset = "thesis4d"
    assert not lab.one_dimensional
    assert len(lab.pvt.sources["vfe"].data["x"]) == lab.dataset.X_test.shape[0]


def test_sessions_do_not_share_state():
    a, b = SparseRegressionLab(), SparseRegressionLab()
    a.settings.M = 5
    a.settings.noise_variance = 0.5
    assert b.settings.M == 15 and b.settings.noise_variance == 0.09
    assert len(b.posterior.inducing.data["x"]) == 15
    assert a.posterior.figure is not b.posterior.figure


def test_state_exports_to_json(lab):
    lab.settings.M = 4
    state = json.loads(lab._state_json().read())
    assert state["settings"]["M"] == 4 and len(state["Z"]) == 4


def test_renders_for_jupyter_and_as_a_standalone_page(lab, tmp_path):
    root = pn.panel(lab).get_root()
    names = {m.name for m in root.references()}
    assert {"posterior", "inducing", "sandwich", "terms"} <= names
    pn.panel(lab).save(tmp_path / "page.html")
    assert "posterior" in (tmp_path / "page.html").read_text()


def test_serve_command_lists_every_page():
    cmd = serve_command(port=5999)
    assert any(c.endswith("sparse_regression.py") for c in cmd)
    assert cmd[cmd.index("--port") + 1] == "5999"
    assert MAX_UPLOAD_BYTES < int(cmd[cmd.index("--websocket-max-message-size") + 1])


def test_gpexplorer_serve_serves_every_page(tmp_path):
    """The README's main command, run like a user would (panel's command line in-process)."""
    port = free_port()
    with open(tmp_path / "serve.log", "wb") as log:
        process = subprocess.Popen([sys.executable, "-m", "gpexplorer.cli", "serve", "--port", str(port)],
                                   stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ),
                                   start_new_session=True)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        for page in ("sparse_regression", "linearized"):
            deadline = time.monotonic() + 120
            while True:
                assert process.poll() is None, (tmp_path / "serve.log").read_text()
                try:
                    with opener.open(f"http://127.0.0.1:{port}/{page}", timeout=60) as response:
                        assert response.status == 200 and b"bokeh" in response.read().lower()
                        break
                except OSError:
                    assert time.monotonic() < deadline, (tmp_path / "serve.log").read_text()
                    time.sleep(0.2)
    finally:
        stop_process_group(process)


def test_tightened_upper_bound_reveals_fitc_overestimating(lab):
    """Thesis §3.2.6 / fig. 3.6: with enough inducing inputs, the bound with its own optimised Z
    drops below FITC's evidence at FITC's optimum; the badge and the sandwich marker show it."""
    lab.settings.param.update(M=25, max_iter=1000, approximations=["exact", "fitc"])
    lab.start_fit()
    assert _finish(lab) == "done"
    fitc = lab.comparison.results["fitc"]
    assert fitc.log_evidence <= fitc.upper_bound  # the plain bound at FITC's own Z cannot tell
    lab.start_tighten()
    assert _finish(lab) == "done"
    fitc = lab.comparison.results["fitc"]
    assert fitc.exact_at_params <= fitc.tightened_upper_bound < fitc.upper_bound
    assert fitc.log_evidence > fitc.tightened_upper_bound
    assert any(b.kind == "above-upper-bound" for b in lab.comparison.badges)
    assert 'data-kind="above-upper-bound"' in lab.badge_pane.object
    assert lab.sandwich.tight.data["x"] == [fitc.tightened_upper_bound]


def test_tab_views_are_computed_when_shown_and_kept_current(lab):
    assert lab.add_one.series.labels == []  # hidden tab: not computed yet
    lab.view_tab = "add_one"
    assert {"VFE total", "FITC total", "VFE trace"} <= set(lab.add_one.series.labels)
    z, total = lab.add_one.series.get("VFE total")
    assert len(z) == 80 and np.nanmin(total) >= -1e-6  # an extra inducing input never hurts VFE
    before = np.array(total)
    lab.settings.lengthscale = 1.0
    assert not np.allclose(lab.add_one.series.get("VFE total")[1], before)
    lab.view_tab = "split"
    g = np.array(lab.split.source.data["g"])
    np.testing.assert_allclose(g, lab.comparison.results["vfe"].mean, rtol=1e-10)


def test_a_second_fit_is_warm_started(lab):
    lab.settings.max_iter = 300
    lab.start_fit()
    _finish(lab)
    first = lab.fits
    lab.settings.noise_variance = lab.settings.noise_variance * 1.05  # a user's nudge to VFE's optimum
    lab.start_fit()
    _finish(lab)
    second = lab.fits
    np.testing.assert_allclose(second["fitc"].trace[0].Z, first["fitc"].final.Z)  # FITC: its own optimum
    assert second["vfe"].trace[0].noise_variance == pytest.approx(first["vfe"].final.noise_variance * 1.05)
    assert second["fitc"].log_evidence[0] == pytest.approx(max(first["fitc"].log_evidence), rel=1e-9)
    assert second["exact"].n_iter <= 5 < first["exact"].n_iter  # already at its optimum


def test_invalid_url_values_are_reported_not_raised(lab):
    lab.apply_url({"M": "abc"})
    assert "ignored URL values: M (must be an integer, not text)" in lab.badge_pane.object
    lab.settings.noise_variance = 0.2  # the page keeps working, the warning stays visible
    assert "ignored URL values: M" in lab.badge_pane.object


@pytest.mark.parametrize("query, kept, rejected", [
    ({"period": "0", "kernel": "periodic"}, {"kernel": "periodic"}, "period (must be at least 0.001, not 0)"),
    ({"lengthscale": "1e300", "noise_variance": "1e-06"}, {"noise_variance": 1e-6}, "lengthscale (must be at most"),
    ({"inducing_inputs": "[NaN]"}, {}, "inducing_inputs (every value must be finite"),
    ({"inducing_inputs": "[1e308,-1e308]"}, {}, "inducing_inputs (every value must be finite"),
    ({"inducing_inputs": "[" + ",".join(["0.5"] * 250) + "]"}, {}, "inducing_inputs (250 values; 1 to 200"),
    ({"inducing_inputs": "[" + ",".join(["0.5"] * 5000) + "]"}, {}, "inducing_inputs (20,001 characters; at most"),
    ({"data_noise": "nan", "M": "12"}, {"M": 12}, "data_noise (not a finite number)"),
    ({"M": "15", "no_such_key": "1"}, {"M": 15}, "no_such_key (not a setting of this page)"),
])
def test_each_url_key_is_kept_or_named(lab, query, kept, rejected):
    """Issue 14 bug 5: a valid value sent with an invalid one was dropped with it; NaN inducing
    inputs were ignored silently and huge ones accepted while M read 15; rejected values stayed
    in the address bar."""
    lab.apply_url(query)
    assert rejected in lab.badge_pane.object
    for name, value in kept.items():
        assert getattr(lab.settings, name) == value
    bad = rejected.split(" (")[0]
    address = urllib.parse.parse_qs(lab.address_bar.search.lstrip("?"))
    assert bad not in address and all(name in address for name in kept)


def test_inducing_inputs_in_the_url_decide_m_and_the_address_follows_the_state(lab):
    lab.apply_url({"M": "15", "inducing_inputs": "[1.0,2.5,4.0]", "lesson": "why-inducing", "step": "2"})
    assert lab.settings.M == 3 and lab.url_warning is None
    address = urllib.parse.parse_qs(lab.address_bar.search.lstrip("?"))
    assert address["M"] == ["3"] and address["lesson"] == ["why-inducing"] and address["step"] == ["2"]
    lab.settings.lengthscale = 0.8  # a later change shows in the address bar too
    assert urllib.parse.parse_qs(lab.address_bar.search.lstrip("?"))["lengthscale"] == ["0.8"]


def test_more_inducing_inputs_than_data_points_still_evaluates(lab):
    lab._on_upload(type("E", (), {"new": b"x,y\n1,2\n2,3\n3,1\n4,0\n5,2\n"})())
    assert lab.dataset.n == 5 and lab.settings.M == 15 > lab.dataset.n
    assert all(r.error is None for r in lab.comparison.results.values())
    assert len(lab.posterior.inducing.data["x"]) == 15


def test_data_controls_show_only_where_they_act(lab):
    """Issue 14 bug 4: N points, Data noise and Data seed showed for every dataset."""
    shown = lambda: {n for n in ("n_points", "data_noise", "data_seed") if (lab.settings.param[n].precedence or 0) >= 0}
    assert lab.settings.dataset == "snelson" and shown() == set()
    lab.settings.dataset = "synthetic1d"
    assert shown() == {"n_points", "data_noise", "data_seed"}
    lab.settings.dataset = "thesis4d"
    assert shown() == {"data_seed"}  # the 4-D problem has its own N (400), so no N slider saying 200
    assert lab.settings.param["data_noise"].step <= 1e-4  # 0.0001 .. 1, not steps of 0.1


def test_sessions_hide_data_controls_independently():
    a, b = SparseRegressionLab(), SparseRegressionLab()
    a.settings.dataset = "synthetic1d"
    assert a.settings.param["n_points"].precedence > 0 and b.settings.param["n_points"].precedence < 0


@pytest.mark.parametrize("n_inputs", [2, 49])
def test_a_csv_with_several_input_columns_becomes_the_dataset(lab, n_inputs):
    """Issue 14 bug 1: x1, x2, y (or 50 columns) was announced as loaded but the previous dataset
    stayed, with a traceback in the server log. It is shown predicted against observed y."""
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 5, (100, n_inputs))
    y = np.sin(X[:, 0]) + 0.1 * X[:, -1]
    header = ",".join(f"x{j + 1}" for j in range(n_inputs)) + ",y"
    rows = "\n".join(",".join(f"{v:.4f}" for v in row) + f",{t:.4f}" for row, t in zip(X, y))
    lab.upload.filename = "several.csv"
    lab._on_upload(type("E", (), {"new": f"{header}\n{rows}\n".encode()})())
    assert f"{n_inputs} input column(s)" in lab.upload_message.object
    assert lab.settings.dataset == "upload" and lab.dataset.input_dim == n_inputs
    assert not lab.one_dimensional and lab.error is None
    points = lab.pvt.sources["vfe"].data
    np.testing.assert_allclose(points["x"], y, atol=1e-4)  # against the observed y
    assert len(points["y"]) == 100 and np.all(np.isfinite(points["y"]))
    assert "training points" in lab.pvt.figure.title.text


def test_serve_passes_num_procs_and_the_front_page_to_panel(tmp_path):
    one = serve_command(port=5123)
    assert "--num-procs" not in one
    two = serve_command(port=5123, num_procs=2, index=tmp_path / "index.html")
    assert two[two.index("--num-procs") + 1] == "2"
    assert two[two.index("--index") + 1] == str(tmp_path / "index.html")
    assert two[two.index("--static-dirs") + 1].startswith("gpx-front=")
    from gpexplorer.cli import main
    assert main(["serve", "--num-procs", "-1", "--dry-run"]) == 2  # refused with a message


def test_serve_reruns_itself_under_its_environment_unless_the_user_chose_one(monkeypatch):
    """The system allocator (closed sessions' memory can only be trimmed back from glibc's heap,
    ``ui/sessions.py``) and one BLAS thread per call (small matrices, sessions side by side)."""
    import gpexplorer.cli as cli

    calls = []
    monkeypatch.setattr(cli.os, "execve", lambda exe, argv, env: calls.append((argv, env)))
    monkeypatch.delenv("PYTHONMALLOC", raising=False)
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    cli._use_server_environment(["serve", "--port", "5123"])
    (argv, env), = calls
    assert argv[1:] == ["-m", "gpexplorer.cli", "serve", "--port", "5123"]
    assert env["PYTHONMALLOC"] == "malloc" and env["OPENBLAS_NUM_THREADS"] == "1"
    monkeypatch.setenv("PYTHONMALLOC", "pymalloc")
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")
    cli._use_server_environment(["serve"])
    assert len(calls) == 1  # the user's own settings: no re-run
    monkeypatch.delenv("OPENBLAS_NUM_THREADS")
    cli._use_server_environment(["serve"])
    assert calls[-1][1]["PYTHONMALLOC"] == "pymalloc" and calls[-1][1]["OPENBLAS_NUM_THREADS"] == "1"
