"""Issue 26, `gpexplorer reproduce conv-mnist10 | conv-fashion | conv-colour`: thesis Table 5.1 scaled
down, the same four kernels on Fashion-MNIST, and the §5.8 colour kernels on the synthetic colour
task. The --quick forms run through dask (threads; conv-colour on an existing cluster by address),
write CSV and JSON, and every claim in the report is a verdict that follows from the rows."""

import csv
import json
import math

import numpy as np
import pytest

from gpexplorer import cli
from gpexplorer.experiments import conv_colour, conv_fashion, conv_mnist10


@pytest.fixture(scope="module")
def mnist(tmp_path_factory):
    pytest.importorskip("dask.distributed")
    out = tmp_path_factory.mktemp("conv_mnist10")
    return conv_mnist10.run(quick=True, n_workers=2, processes=False, progress=False, out=out)


@pytest.fixture(scope="module")
def colour(tmp_path_factory):
    dd = pytest.importorskip("dask.distributed")
    out = tmp_path_factory.mktemp("conv_colour")
    with dd.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster:
        return conv_colour.run(quick=True, scheduler=cluster.scheduler_address, progress=False, out=out)


def _verdict(a, b, se2):
    return "HOLDS" if a < b - se2 else ("does NOT hold" if a > b + se2 else "within noise (2 s.e.)")


def test_mnist10_quick_rows_files_and_scaling(mnist):
    rows = mnist["rows"]
    assert [r["model"] for r in rows] == list(conv_mnist10.MODELS)
    assert mnist["likelihood"] == "robust_max" and all(r["likelihood"] == "robust_max" for r in rows)
    assert all(r["scaling"] == ("-" if r["model"] == "se" else "mean") for r in rows)
    for r in rows:
        assert 0 <= r["error_rate"] <= 1 and math.isfinite(r["nlpp"]) and r["nlpp"] > 0
        assert math.isfinite(r["elbo"]) and r["elbo"] < 0 and r["step_seconds"] > 0
        assert (r["thesis_error_rate"], r["thesis_nlpp"]) == conv_mnist10.THESIS_TABLE.get(r["model"], (None, None))
        # Adam leaves the model at the best traced full-data ELBO
        assert r["elbo"] == pytest.approx(max(r["elbo_trace"]))
    conv = [r for r in rows if r["model"] != "se"]
    assert all(0 < r["kernel_share"] <= 1 for r in conv) and rows[0]["kernel_share"] is None
    assert "weights_sd" in rows[2]["kernel"] and "se_variance" in rows[3]["kernel"]
    with open(mnist["files"]["csv"], newline="") as fh:
        table = list(csv.DictReader(fh))
    assert len(table) == len(conv_mnist10.MODELS) and set(table[0]) == set(conv_mnist10.COLUMNS)
    saved = json.loads(open(mnist["files"]["json"]).read())
    assert saved["quick"] is True and len(saved["claims"]) == len(mnist["claims"])
    assert all(r["shared"] for r in rows)  # convgp's set-up: one kernel and Z for the 10 latents
    probe = mnist["probe"]
    assert [(p["image"], p["shared"]) for p in probe] == [("28x28", True), ("28x28", False), ("7x7", True),
                                                          ("7x7", False)]
    for p in probe:
        assert p["latents"] == 10 and p["step_seconds"] > 0 and p["kernel_passes"] == (1 if p["shared"] else 10)
    # ten copies of the kernel do the 28x28 sums ten times, the shared kernel once (counted, not timed:
    # a ratio of step times is a benchmark's figure, and under load it came out 2.2x instead of ~4x)
    text = conv_mnist10.format_report(mnist)
    for needle in ("SCALED DOWN", "robust_max", "mean", "0.0235", "0.881", "10 latents", "28x28", "7x7",
                   "a kernel per latent"):
        assert needle in text, needle


def test_mnist10_claims_follow_from_the_rows(mnist):
    rows, n = mnist["rows"], mnist["n_test"]
    err = {r["model"]: r["error_rate"] for r in rows}
    acc = {m: 1 - e for m, e in err.items()}
    found = {c: (v, nums) for c, v, nums in mnist["claims"]}
    assert len(found) == 8
    elbo = {r["model"]: r["elbo"] for r in rows}
    for claim, (verdict, numbers) in found.items():
        if "mean-field" in claim:
            assert verdict == ("HOLDS" if elbo["weighted+se"] > elbo["weighted+se-mf"] else "does NOT hold")
            assert f"joint {elbo['weighted+se']:.1f}, mean-field {elbo['weighted+se-mf']:.1f}" in numbers
        elif "accuracy above" in claim:
            model = claim.split()[0]
            assert verdict == ("HOLDS" if acc[model] > conv_mnist10.SAVIGP_SE_ACCURACY else "does NOT hold")
            assert f"{acc[model]:.4f}" in numbers
        else:
            a, b = {"weighting": ("weighted", "invariant"), "adding": ("weighted+se", "weighted"),
                    "weighted": ("weighted", "se"), "SE": ("se", "invariant")}[claim.split()[0]]
            se2 = 2 * math.hypot(*(math.sqrt(max(e * (1 - e), 1 / n) / n) for e in (err[a], err[b])))
            assert verdict == _verdict(err[a], err[b], se2), claim
            assert f"{err[a]:.4f} vs {err[b]:.4f}" in numbers


def test_compare_and_claims_read_synthetic_numbers():
    def rows(model, errs):
        return [{"model": model, "error_rate": e, "accuracy": 1 - e} for e in errs]

    assert conv_mnist10.compare(rows("a", [0.01, 0.02]), rows("b", [0.10, 0.12]), 1000)[0] == "HOLDS"
    assert conv_mnist10.compare(rows("a", [0.10]), rows("b", [0.02]), 1000)[0] == "does NOT hold"
    assert conv_mnist10.compare(rows("a", [0.020]), rows("b", [0.022]), 1000)[0].startswith("within noise")
    table = rows("se", [0.05]) + rows("invariant", [0.07]) + rows("weighted", [0.02])
    found = {c.split(":")[0]: v for c, v, _ in conv_mnist10.claims(table, 1000)}
    assert found["weighting helps"] == "HOLDS" and found["adding an SE part helps"] == "n/a"
    assert found["weighted accuracy above the README's SAVIGP SE result on mnist_5k (88.1%)"] == "HOLDS"
    assert found["weighted+se accuracy above the README's SAVIGP SE result on mnist_5k (88.1%)"] == "n/a"


def test_fashion_quick_reports_ours_only():
    pytest.importorskip("dask.distributed")
    result = conv_fashion.run(quick=True, n_workers=1, processes=False, progress=False,
                              models=("se", "weighted"), probe=False)
    assert result["dataset"] == "fashion_mnist5k" and [r["model"] for r in result["rows"]] == ["se", "weighted"]
    assert all(r["thesis_error_rate"] is None for r in result["rows"])
    found = {c: v for c, v, _ in result["claims"]}
    assert len(found) == 5 and not any("README" in c for c in found)  # no MNIST reference on Fashion
    assert found["weighting helps: weighted beats invariant (thesis, MNIST: 1.38 vs 2.35 %)"] == "n/a"
    text = conv_fashion.format_report(result)
    assert "not run in the thesis" in text and "thesis err" not in text and "SCALED DOWN" in text


def test_colour_quick_on_an_existing_cluster(colour):
    rows = colour["rows"]
    assert {r["variant"] for r in rows} == set(conv_colour.VARIANTS) and colour["seeds"] == [0]
    M = colour["settings"]["M"]
    assert {r["variant"]: r["inducing_variables"] for r in rows} == {"none": M, "patch": M, "multi": 3 * M,
                                                                     "additive": M}
    assert colour["cluster"]["workers"] == 2
    with open(colour["files"]["csv"], newline="") as fh:
        assert len(list(csv.DictReader(fh))) == 4
    err = {r["variant"]: r["error_rate"] for r in rows}
    n = colour["n_test"]
    found = {c: (v, nums) for c, v, nums in colour["claims"]}
    patch = found["colour interaction matters: 'patch' beats the baseline ('none') and 'additive'"]
    # the data set is built so that only a kernel on the whole colour patch sees the label
    assert patch[0] == "HOLDS" and err["patch"] < min(err["none"], err["additive"])
    for claim, (verdict, numbers) in found.items():
        if claim.startswith("the kernels additive"):
            ok = all(abs(err[v] - 0.5) <= 2 * math.sqrt(0.25 / n) for v in ("none", "multi", "additive"))
            assert verdict == ("HOLDS" if ok else "does NOT hold")
        else:
            pairs = [("multi", "none"), ("multi", "additive")] if "'multi'" in claim else (
                [("patch", "none"), ("patch", "additive")] if "'patch'" in claim else
                [(a, "none") for a in ("patch", "multi", "additive")])
            vs = [_verdict(err[a], err[b], 2 * math.hypot(*(math.sqrt(max(e * (1 - e), 1 / n) / n)
                                                              for e in (err[a], err[b])))) for a, b in pairs]
            want = "HOLDS" if all(v == "HOLDS" for v in vs) else (
                "does NOT hold" if any(v.startswith("does NOT") for v in vs) else "not shown (within noise)")
            assert verdict == want, claim
    text = conv_colour.format_report(colour)
    assert "SYNTHETIC" in text and "CIFAR-10" in text and "38.1" in text


def test_pool_and_bad_input():
    X = np.arange(2 * 16, dtype=float).reshape(2, 16)
    P = conv_mnist10.pool(X, 4, 2)
    assert P.shape == (2, 4) and P[0, 0] == pytest.approx(np.mean([0, 1, 4, 5]))
    with pytest.raises(ValueError, match="pool factor"):
        conv_mnist10.pool(X, 4, 3)
    data = {"X": X, "y": np.zeros(2), "side": 4}
    with pytest.raises(ValueError, match="model must be one of"):
        conv_mnist10.build_model("rbf", data, 2)
    with pytest.raises(ValueError, match="variant must be one of"):
        conv_colour.build_model("rgb", {"X": np.zeros((2, 300)), "y": np.zeros(2)}, 2)
    with pytest.raises(ValueError, match="dataset must be one of"):
        conv_mnist10.load("cifar10")
    with pytest.raises(ValueError, match="settings has unknown entries"):
        conv_mnist10.run(quick=True, settings={"pooling": 2})
    with pytest.raises(ValueError, match="models must be among"):
        conv_mnist10.run(quick=True, models=("se", "cnn"))
    with pytest.raises(ValueError, match="variants must be among"):
        conv_colour.run(quick=True, variants=("none", "hsv"))


def test_likelihood_falls_back_to_softmax(monkeypatch):
    assert conv_mnist10.choose_likelihood() == ("robust_max", "quadrature")

    def missing(name, **options):
        raise ValueError(f"unknown likelihood {name!r}")

    monkeypatch.setattr(conv_mnist10, "get_likelihood", missing)
    assert conv_mnist10.choose_likelihood() == ("softmax", "reparam")


def test_cli_dispatches_to_the_modules(monkeypatch, capsys):
    calls = []
    for module in (conv_mnist10, conv_fashion, conv_colour):
        monkeypatch.setattr(module, "run", lambda m=module, **kw: calls.append((m.__name__, kw)) or {})
        monkeypatch.setattr(module, "format_report", lambda r, m=module: f"{m.__name__} report")
    assert cli.main(["reproduce", "conv-mnist10", "--quick", "--num-inducing", "50"]) == 0
    assert cli.main(["reproduce", "conv-colour", "--scheduler", "tcp://127.0.0.1:8786", "--seed", "3"]) == 0
    assert cli.main(["reproduce", "conv-fashion", "--max-iter", "7"]) == 0
    (m1, kw1), (m2, kw2), (m3, kw3) = calls
    assert m1.endswith("conv_mnist10") and kw1["quick"] and kw1["num_inducing"] == 50 and kw1["out"] == "conv-mnist10"
    assert m2.endswith("conv_colour") and kw2["scheduler"] == "tcp://127.0.0.1:8786" and kw2["seed"] == 3
    assert m3.endswith("conv_fashion") and kw3["max_iter"] == 7
    assert "conv_colour report" in capsys.readouterr().out
