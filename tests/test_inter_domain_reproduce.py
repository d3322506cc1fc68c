"""Issue 15, chapter-4 experiments: `gpexplorer reproduce inter-domain-snelson` (thesis figs.
4.3-4.5) and `gpexplorer reproduce inter-domain-grid` (thesis §4.5 on abalone, through dask)."""

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest

from gpexplorer import cli
from gpexplorer.experiments import distributed, inter_domain_grid, inter_domain_snelson
from gpexplorer.ui import grid_figure


@pytest.fixture(scope="module")
def snelson():
    return inter_domain_snelson.run(quick=True)


def test_snelson_quick_finds_the_near_coincident_pair(snelson):
    pair = snelson["pair"]
    assert snelson["best_has_pair"] and pair is not None
    assert snelson["n_near_coincident"] >= 1
    assert pair["prior_correlation"] > 0.9999 and pair["q_correlation"] > 0.9999
    a_i, a_j = pair["alpha"]
    assert a_i * a_j < 0 and min(abs(a_i), abs(a_j)) > 1e3  # the difference of two basis functions
    assert abs(pair["centres"][0] - pair["centres"][1]) < 0.05
    # the best start is the one kept
    assert snelson["best"]["bound"] == pytest.approx(max(snelson["bounds"]))


def test_the_position_sweep_finds_the_snelson_pathology(snelson):
    """Thesis fig. 4.4: on the coarse grid the bound's best place for the swept member is away from
    the pair (or on the flank of the narrow peak); zooming on the partner finds the true peak, higher,
    at the partner's side, where the fitted model put it."""
    fit = snelson["curves"][0]
    partner = snelson["pair"]["centres"][1]
    (x_away, bound_away), (x_peak, bound_peak) = fit["coarse_max_away"], fit["zoom_max"]
    assert abs(x_away - partner) > inter_domain_snelson.AWAY  # the apparent maximum is elsewhere
    assert abs(x_peak - partner) < 0.05  # the true one sits at the partner
    assert bound_peak > bound_away + 1.0  # and is clearly higher
    assert bound_peak == pytest.approx(fit["at_fit"], abs=0.5)  # it is where the optimiser ended
    coarse = fit["coarse"]
    assert np.all(np.isfinite(coarse.bound)) and coarse.grid.size == 100


def test_snelson_extra_jitter_lowers_the_zoomed_peak(snelson):
    fit, *jittered = snelson["curves"]
    assert fit["zoom_max"][1] == pytest.approx(snelson["best"]["bound"], abs=0.5)  # the zoom finds the optimum
    assert fit["zoom_max"][1] >= fit["coarse_max"][1]
    for c in jittered:
        assert c["jitter"] > fit["jitter"]
        assert c["zoom_max"][1] < fit["zoom_max"][1] - 10
        assert c["zoom_max"][1] < c["coarse_max_away"][1]  # the peak is gone: the pair is now a trough


def test_snelson_merge_keeps_the_mean(snelson):
    m = snelson["merge"]
    assert m["basis_sum_penalty"] > 0  # one variable fewer: the bound can only drop (collapsed VFE)
    assert m["basis_sum_mean_diff"] < 1e-3 * m["mean_range"]
    assert math.isfinite(m["sod_penalty"]) and m["sod_penalty"] <= m["sod_start_penalty"] + 1e-6
    text = inter_domain_snelson.format_report(snelson)
    assert "0.99999979" in text and "Where ours differs" in text


def test_grid_quick_runs_on_a_local_cluster_and_writes_csv_json(tmp_path):
    pytest.importorskip("dask.distributed")
    result = inter_domain_grid.run(quick=True, out=tmp_path, n_workers=2, processes=False, progress=False)
    assert result["cluster"]["workers"] == 2
    rows = result["rows"]
    expected = {(v, M, C) for v in inter_domain_grid.VARIANTS for M in inter_domain_grid.QUICK_M
                for C in inter_domain_grid.QUICK_C}
    assert {(r["variant"], r["M"], r["C"]) for r in rows} == expected
    with open(result["files"]["csv"], newline="") as fh:
        table = list(csv.DictReader(fh))
    assert len(table) == len(expected) and set(table[0]) == set(inter_domain_grid.COLUMNS)
    assert all(math.isfinite(float(r["rmse"])) and math.isfinite(float(r["nlpd"])) for r in table)
    saved = json.loads(open(result["files"]["json"]).read())
    assert len(saved["rows"]) == len(expected) and saved["quick"] is True
    for r in table:
        M, C = int(r["M"]), int(r["C"])
        assert int(r["storage"]) == M + M * M + M * C * (result["D"] + 1)
    assert "figure" not in result["files"]  # drawn by the UI side, below
    page = grid_figure.write_figure(result, tmp_path / "grid.html").read_text()
    assert "Bokeh" in page and "cdn.bokeh.org" not in page  # self-contained: opens offline
    layout = grid_figure.grid_layout(result)
    title, maps, front = layout.children
    assert len(maps.children) == len(inter_domain_grid.VARIANTS)
    for heat in maps.children:
        assert len(heat.renderers[0].data_source.data["rmse"]) == len(expected) // len(inter_domain_grid.VARIANTS)
    text = inter_domain_grid.format_report(result)
    assert "substitute" in text and "claims" in text
    fixed = [r for r in rows if r["variant"] == "fixed"]
    assert all(r["noise_variance"] == pytest.approx(result["exact"]["hypers"]["noise_variance"]) for r in fixed)


def test_grid_claims_read_the_numbers():
    rows = []
    for v in ("clean", "fixed"):
        for M in inter_domain_grid.GRID_M:
            for C in inter_domain_grid.GRID_C:
                rmse = 0.6 + 0.2 / (M * C) ** 0.5  # more basis functions, lower error
                rows.append({"variant": v, "M": M, "C": C, "rmse": rmse, "nlpd": 1 + rmse, "bound": -1000 + M,
                             "storage": inter_domain_grid.storage(M, C, 10)})
    found = dict((c, v) for c, v, _ in inter_domain_grid.claims(rows, {"rmse": 0.6}, inter_domain_grid.GRID_M,
                                                                   inter_domain_grid.GRID_C))
    assert found["the gain from C > 1 fades as M grows (clean)"] == "HOLDS"
    assert found["with fixed hyperparameters C > 1 still helps at small M"] == "HOLDS"
    assert any(k.startswith("M=10, C=20 beats") and v == "HOLDS" for k, v in found.items())


def test_dask_missing_names_the_extra(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_dask(name, *args, **kwargs):
        if name.startswith("dask"):
            raise ImportError("no dask here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_dask)
    with pytest.raises(ImportError, match=r"pip install -e '\.\[sweeps\]'"):
        distributed.require_dask()


def test_cli_entry_points_parse(monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(inter_domain_snelson, "run", lambda **kw: calls.append(("snelson", kw)) or {})
    monkeypatch.setattr(inter_domain_snelson, "format_report", lambda r: "snelson report")
    monkeypatch.setattr(inter_domain_grid, "run", lambda **kw: calls.append(("grid", kw)) or {"files": {}})
    monkeypatch.setattr(grid_figure, "write_figure", lambda result, path: calls.append(("figure", path)) or path)
    monkeypatch.setattr(inter_domain_grid, "format_report", lambda r: "grid report")
    assert cli.main(["reproduce", "inter-domain-snelson", "--quick"]) == 0
    assert cli.main(["reproduce", "inter-domain-grid", "--quick", "--scheduler", "tcp://127.0.0.1:8786",
                     "--out", "somewhere", "--max-iter", "5"]) == 0
    assert calls[0] == ("snelson", {"quick": True})
    name, kw = calls[1]
    assert name == "grid" and kw["scheduler"] == "tcp://127.0.0.1:8786" and kw["out"] == "somewhere"
    assert kw["quick"] is True and kw["max_iter"] == 5
    assert calls[2] == ("figure", Path("somewhere") / "grid.html")
    assert cli.main(["reproduce", "inter-domain-grid"]) == 0 and calls[3][1]["out"] == "inter-domain-grid"
    out = capsys.readouterr().out
    assert "snelson report" in out and "grid report" in out


def test_package_imports_without_dask():
    import subprocess
    import sys

    code = ("import sys; sys.modules['dask'] = None; sys.modules['dask.distributed'] = None; "
            "import gpexplorer, gpexplorer.experiments.inter_domain_grid, gpexplorer.cli; print('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr


def test_progress_lines_show_a_bar_the_count_and_the_cell(capsys):
    assert distributed.progress_bar(0, 8, width=8) == "[........] 0/8"
    assert distributed.progress_bar(3, 12, width=8) == "[##......]  3/12"
    assert distributed.progress_bar(12, 12, width=8) == "[########] 12/12"
    distributed.print_progress(6, 12, {"M": 5}, {"summary": "clean M=5 C=1 RMSE 0.7"}, 30.0)
    line = capsys.readouterr().out
    assert "[############............]  6/12" in line and "~30 s left" in line and "clean M=5 C=1" in line
