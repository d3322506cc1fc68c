"""Issue 16, `gpexplorer reproduce savigp-*`: the SAVIGP paper's experiments beside the paper and
its authors' re-runs. Each --quick path runs (sweeps through dask with threads) and returns finite
numbers in the expected tables; substitutes are named; the CLI parses the new choices."""

import csv
import json
import math

import numpy as np
import pytest

from gpexplorer import cli
from gpexplorer.datasets import arrays as datasets_arrays
from gpexplorer.experiments import distributed, savigp_coal, savigp_large, savigp_papers


def _finite(*values):
    return all(v is not None and math.isfinite(v) for v in values)


@pytest.fixture(scope="module")
def dask_ok():
    pytest.importorskip("dask.distributed")


@pytest.fixture
def spy_run_cells(monkeypatch):
    """Record that the sweeps go through distributed.run_cells (and force threads)."""
    calls = []
    real = distributed.run_cells

    def spy(func, cells, **kw):
        calls.append((func.__name__, len(cells), kw.get("processes")))
        return real(func, cells, **kw)

    monkeypatch.setattr(distributed, "run_cells", spy)
    return calls


@pytest.mark.parametrize("name", ["boston", "abalone", "breast-cancer"])
def test_sweep_quick_runs_through_dask_and_writes_csv_json(name, dask_ok, spy_run_cells, tmp_path):
    result = savigp_papers.run_sweep(name, quick=True, n_workers=2, processes=False, progress=False, out=tmp_path)
    assert spy_run_cells == [("run_cell", len(result["rows"]), False)]
    quick = savigp_papers.SWEEPS[name]["quick"]
    assert {(r["posterior"], r["sf"]) for r in result["rows"]} == {(p, s) for p in savigp_papers.POSTERIORS
                                                                   for s in quick["sf"]}
    table = result["table"]
    assert table and all(set(savigp_papers.TABLE_COLUMNS) <= set(t) for t in table)
    assert {t["metric"] for t in table} == set(savigp_papers.SWEEPS[name]["metrics"])
    assert all(_finite(t["ours"], t["ours_sd"], t["seconds"]) for t in table)
    with open(result["files"]["csv"], newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == len(result["rows"]) and set(rows[0]) == set(savigp_papers.CELL_COLUMNS)
    assert json.loads(open(result["files"]["json"]).read())["quick"] is True
    text = savigp_papers.format_sweep(result)
    assert "where ours differs" in text and "authors" in text
    if name == "breast-cancer":
        assert "SUBSTITUTE" in text and "569 x 30" in text
        assert all(0 <= t["ours"] <= 0.2 for t in table if t["metric"] == "error_rate")
    else:
        assert all(0 < t["ours"] < 1.5 for t in table if t["metric"] == "sse")


def test_sweep_reference_values_sit_beside_ours():
    rows = [{"posterior": p, "sf": 0.1, "M": 30, "metric1": "error_rate", "value1": 0.04, "metric2": "nlp",
             "value2": 0.2, "seconds": 1.0} for p in savigp_papers.POSTERIORS]
    table = savigp_papers.summarise("breast-cancer", rows)
    fg = {t["metric"]: t for t in table if t["posterior"] == "fg"}
    assert fg["error_rate"]["paper"] == pytest.approx(0.036) and fg["nlp"]["paper"] == pytest.approx(0.0934)
    differs = savigp_papers._differs(table)
    assert any("nlp 0.2000" in d for d in differs) and not any("error_rate" in d for d in differs)


def test_coal_quick_fg_band_wider_than_mog1(dask_ok, spy_run_cells, tmp_path):
    result = savigp_coal.run_coal(quick=True, n_workers=2, processes=False, progress=False, out=tmp_path)
    assert spy_run_cells and spy_run_cells[0][0] == "run_coal_cell"
    data = savigp_coal.coal_data()
    assert len(data["y"]) == 811 and data["y"].sum() == 191
    for r in result["rows"]:
        assert np.all(np.isfinite(r["mean"])) and np.all(r["lo"] <= r["mean"]) and np.all(r["mean"] <= r["hi"])
        assert 0.05 < r["mean"].mean() < 0.5  # ~191/811 events per bin
    assert result["mog1_underestimates"] and all(v < 0.5 for v in result["variance_ratio"].values())
    text = savigp_coal.format_coal(result)
    assert "90 % band" in text and "under-estimates the variance" in text and "HOLDS" in text
    with open(result["files"]["csv"], newline="") as fh:
        assert sum(1 for _ in csv.DictReader(fh)) == 811 * len(result["rows"])


def test_mnist_quick_names_the_different_data(tmp_path):
    result = savigp_large.run_mnist(quick=True, out=tmp_path, progress=False)
    (row,) = result["rows"]
    assert set(savigp_large.MNIST_COLUMNS) <= set(row)
    assert _finite(row["accuracy"], row["nlp"], row["seconds"]) and row["M"] <= 200
    assert row["accuracy"] > 0.2  # 10 classes: well above chance after 30 steps
    text = savigp_large.format_mnist(result)
    assert "DIFFERENT DATA" in text and "0.9749" in text  # the paper's 97.49 % beside ours
    assert "where ours differs" in text
    with pytest.raises(ValueError, match="at most|between 1 and 200"):
        savigp_large.run_mnist(quick=True, M=500, progress=False)


def test_usps_quick_puts_savigp_beside_egp_and_ugp(dask_ok, spy_run_cells, tmp_path):
    result = savigp_large.run_usps(quick=True, n_workers=2, processes=False, progress=False, out=tmp_path)
    assert spy_run_cells and spy_run_cells[0][0] == "usps_cell"
    methods = [r["method"].split(" (")[0] for r in result["rows"]]
    assert methods == ["SAVIGP FG", "EGP", "UGP"]
    for r in result["rows"]:
        assert set(savigp_large.USPS_COLUMNS) <= set(r) and _finite(r["error_rate"], r["nlp"], r["seconds"])
        assert r["error_rate"] < 0.2
    text = savigp_large.format_usps(result)
    assert "EGP paper Table 2" in text and "where ours differs" in text


def test_missing_data_file_gives_a_clear_message(monkeypatch, tmp_path):
    monkeypatch.setenv("GPEXPLORER_ASSETS", str(tmp_path))
    monkeypatch.setattr(datasets_arrays, "SHARED_DATASETS", tmp_path / "nowhere")
    with pytest.raises(ValueError, match="boston_housing.csv is missing"):
        savigp_papers.load_sweep_data("boston")


def test_cli_parses_the_savigp_choices(monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(savigp_papers, "run_sweep", lambda name, **kw: calls.append(("sweep", name, kw)) or {})
    monkeypatch.setattr(savigp_papers, "format_sweep", lambda r: "sweep report")
    monkeypatch.setattr(savigp_coal, "run_coal", lambda **kw: calls.append(("coal", kw)) or {})
    monkeypatch.setattr(savigp_coal, "format_coal", lambda r: "coal report")
    monkeypatch.setattr(savigp_large, "run_usps", lambda **kw: calls.append(("usps", kw)) or {})
    monkeypatch.setattr(savigp_large, "format_usps", lambda r: "usps report")
    monkeypatch.setattr(savigp_large, "run_mnist", lambda **kw: calls.append(("mnist", kw)) or {})
    monkeypatch.setattr(savigp_large, "format_mnist", lambda r: "mnist report")
    assert cli.main(["reproduce", "savigp-boston", "--quick", "--scheduler", "tcp://127.0.0.1:8786",
                     "--out", "somewhere", "--folds", "2", "--max-iter", "7"]) == 0
    assert cli.main(["reproduce", "savigp-breast-cancer", "--workers", "3"]) == 0
    assert cli.main(["reproduce", "savigp-abalone", "--quick"]) == 0
    assert cli.main(["reproduce", "savigp-coal", "--quick"]) == 0
    assert cli.main(["reproduce", "savigp-usps", "--quick", "--workers", "1"]) == 0
    assert cli.main(["reproduce", "savigp-mnist", "--quick", "--num-inducing", "50", "--estimator", "score"]) == 0
    kind, name, kw = calls[0]
    assert (kind, name) == ("sweep", "boston") and kw["scheduler"] == "tcp://127.0.0.1:8786"
    assert kw["out"] == "somewhere" and kw["folds"] == 2 and kw["max_iter"] == 7 and kw["quick"] is True
    assert calls[1][1] == "breast-cancer" and calls[1][2]["n_workers"] == 3 and calls[1][2]["out"] == "savigp-breast-cancer"
    assert calls[2][1] == "abalone"
    assert calls[3][0] == "coal" and calls[3][1]["quick"] is True
    assert calls[4][0] == "usps" and calls[4][1]["n_workers"] == 1
    assert calls[5][0] == "mnist" and calls[5][1]["M"] == 50 and calls[5][1]["estimator"] == "score"
    out = capsys.readouterr().out
    for report in ("sweep", "coal", "usps", "mnist"):
        assert f"{report} report" in out
    with pytest.raises(SystemExit):
        cli.main(["reproduce", "savigp-nothing"])
