"""Issue 26, `gpexplorer reproduce conv-rectangles | conv-mnist01 | conv-theory`: the thesis' binary
convolutional experiments (§5.5.1-5.5.2, §5.6.1-5.6.2) and §5.4's theory in numbers. The --quick
forms run through dask (threads), write CSV and JSON, and every verdict in ``claims`` is recomputed
here from the rows; the theory's claims are mathematics, so there they must hold (or, where the
thesis' text is wrong, must not), and they are checked against an independent brute-force kernel."""

import contextlib
import csv
import io
import json
import math

import numpy as np
import pytest
from scipy import stats

from gpexplorer import cli
from gpexplorer.experiments import conv_common as cc
from gpexplorer.experiments import conv_mnist01, conv_rectangles, conv_theory


@pytest.fixture(scope="module")
def rect(tmp_path_factory):
    pytest.importorskip("dask.distributed")
    out = tmp_path_factory.mktemp("conv_rectangles")
    return conv_rectangles.run(quick=True, n_workers=2, processes=False, progress=False, out=out)


@pytest.fixture(scope="module")
def mnist01(tmp_path_factory):
    pytest.importorskip("dask.distributed")
    out = tmp_path_factory.mktemp("conv_mnist01")
    return conv_mnist01.run(quick=True, n_workers=2, processes=False, progress=False, out=out)


@pytest.fixture(scope="module")
def theory(tmp_path_factory):
    """Through the command line: (the printed report, the JSON read back, the folder)."""
    out = tmp_path_factory.mktemp("conv_theory")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert cli.main(["reproduce", "conv-theory", "--quick", "--out", str(out)]) == 0
    return printed.getvalue(), json.loads((out / "conv_theory.json").read_text()), out


def _by_claim(result, start):
    found = [c for c in result["claims"] if c["claim"].startswith(start)]
    assert found, f"no claim starting {start!r}"
    return found


def _sign_verdict(wrong_a, wrong_b):
    a, b = np.asarray(wrong_a, bool), np.asarray(wrong_b, bool)
    only_a, only_b = int(np.sum(a & ~b)), int(np.sum(~a & b))
    p = 1.0 if only_a + only_b == 0 else stats.binomtest(only_a, only_a + only_b).pvalue
    return ("HOLDS" if only_a < only_b else "does NOT hold") if p < 0.05 else "within noise"


def _nlpp_verdict(la, lb):
    d = np.asarray(la) - np.asarray(lb)
    se = np.std(d, ddof=1) / math.sqrt(d.size)
    return "HOLDS" if d.mean() > 1.96 * se else ("does NOT hold" if d.mean() < -1.96 * se else "within noise")


# rectangles --------------------------------------------------------------------------------------
def test_rectangles_rows_files_and_setup(rect):
    rows = {r["model"]: r for r in rect["rows"]}
    assert list(rows) == list(conv_rectangles.MODELS)
    assert rect["unique_patches"] == {"train": 45, "train_and_test": 45} and rect["larochelle_unique_patches"] == 35
    assert rect["synthetic"] and rect["n_train"] == 1200 and rect["n_test"] == conv_rectangles.QUICK["n_test"]
    se, conv, w = rows["se"], rows["conv"], rows["weighted"]
    assert se["M"] == se["n_train"] == conv_rectangles.QUICK["se_n_train"] and se["scaling"] == "-"
    assert conv["M"] == w["M"] == 16 and conv["scaling"] == w["scaling"] == "mean"
    for name, r in rows.items():
        assert (r["thesis_error_rate"], r["thesis_nlpp"]) == conv_rectangles.THESIS[name]
        wrong = np.asarray(r["wrong"], bool)
        assert wrong.size == r["n_test"] and r["n_errors"] == wrong.sum()
        assert r["error_rate"] == pytest.approx(wrong.mean())
        assert r["nlpp"] == pytest.approx(-np.mean(r["log_density"])) and r["nlpp"] > 0
        assert r["elbo"] == pytest.approx(max(r["elbo_trace"]))  # left at the best traced full-data ELBO
    # U(0, 1) inducing patches sorted by their mean; the weights one per patch position
    mu = np.asarray(conv["inducing_means"])
    assert np.all(np.diff(mu) >= 0) and np.asarray(conv["inducing_patches"]).shape == (16, 9)
    assert np.asarray(w["weights"]).shape == (26, 26)
    assert 0 < conv["timing"]["kernel_share"] <= 1
    with open(rect["files"]["csv"], newline="") as fh:
        table = list(csv.DictReader(fh))
    assert [t["model"] for t in table] == list(conv_rectangles.MODELS) and set(table[0]) == set(conv_rectangles.COLUMNS)
    saved = json.loads(open(rect["files"]["json"]).read())
    assert saved["quick"] is True and saved["claims"] == rect["claims"]


def test_rectangles_verdicts_follow_from_the_rows(rect):
    rows = {r["model"]: r for r in rect["rows"]}
    assert all(c["verdict"] in cc.VERDICTS for c in rect["claims"])
    for a, b in (("conv", "se"), ("weighted", "conv")):
        (errors,) = _by_claim(rect, f"{a} makes fewer test errors than {b}")
        assert errors["verdict"] == _sign_verdict(rows[a]["wrong"], rows[b]["wrong"])
        (nlpp,) = _by_claim(rect, f"{a} has a lower test NLPP than {b}")
        assert nlpp["verdict"] == _nlpp_verdict(rows[a]["log_density"], rows[b]["log_density"])
    (zero,) = _by_claim(rect, "the weighted kernel makes no test error")
    assert zero["verdict"] == ("HOLDS" if rows["weighted"]["n_errors"] == 0 else "does NOT hold")
    # the edge effect, with the border found independently: a lit pixel in the outer ring of the image
    X = conv_rectangles.load(rect["n_test"])["X_test"].reshape(-1, 28, 28)
    ring = np.zeros((28, 28), bool)
    ring[[0, -1], :] = ring[:, [0, -1]] = True
    border = (X[:, ring] > 0).any(axis=1)
    wrong = np.asarray(rows["conv"]["wrong"], bool)
    a, b = (wrong & border).sum(), (wrong & ~border).sum()
    p = stats.fisher_exact([[a, border.sum() - a], [b, (~border).sum() - b]])[1]
    (edge,) = _by_claim(rect, "conv's errors fall on rectangles with a side on the image border")
    expected = "n/a" if a + b == 0 else (("HOLDS" if a / border.sum() > b / (~border).sum() else "does NOT hold")
                                         if p < 0.05 else "within noise")
    assert edge["verdict"] == expected
    (weights,) = _by_claim(rect, "the weighted kernel gives the border patch positions larger weights")
    W = np.abs(np.asarray(rows["weighted"]["weights"]))
    inner = W[1:-1, 1:-1]
    outer = (W.sum() - inner.sum()) / (W.size - inner.size)
    assert weights["verdict"] == ("HOLDS" if outer > inner.mean() else "does NOT hold")


def test_rectangles_report_shows_ours_beside_the_thesis(rect):
    text = conv_rectangles.format_report(rect)
    assert "DIFFERENT DATA: synthetic rectangles" in text and "Larochelle's set: 35" in text
    assert "'mean' scaling" in text and "[quick" in text
    for c in rect["claims"]:
        assert f"{c['claim']}: {c['verdict']}" in text
    assert "5.0%" in text and "0.258" in text and "0.055" in text and "0.005" in text


def test_rectangles_bad_input_is_refused():
    with pytest.raises(ValueError, match="settings has unknown entries"):
        conv_rectangles.run(quick=True, settings={"stepz": 3})
    with pytest.raises(ValueError, match="models must be"):
        conv_rectangles.run(quick=True, models=("svm",))
    with pytest.raises(ValueError, match="model must be one of"):
        conv_rectangles.build_model("svm", np.zeros((2, 784)), np.zeros(2))


# MNIST 0 vs 1 ------------------------------------------------------------------------------------
def test_mnist01_rows_and_claims(mnist01):
    rows = {r["model"]: r for r in mnist01["rows"]}
    assert list(rows) == list(conv_mnist01.MODELS) and mnist01["image"] == "7x7"
    assert rows["conv"]["patch"] == rows["weighted"]["patch"] == "5x5" and rows["conv-text"]["patch"] == "3x3"
    assert rows["conv"]["z_init"] == "random" and rows["conv-text"]["z_init"] == "uniform"
    assert rows["rbf"]["scaling"] == "-" and all(rows[m]["scaling"] == "mean" for m in ("conv", "weighted"))
    for name, r in rows.items():
        assert r["accuracy"] == pytest.approx(1 - np.mean(r["wrong"]))
        assert r["thesis_accuracy"] == conv_mnist01.THESIS[name]
        if name != "rbf":
            mu = np.asarray(r["inducing_means"])
            assert np.all(np.diff(mu) >= 0) and (r["mu_min"], r["mu_max"]) == (mu[0], mu[-1])
            assert len(r["inducing_means_whitened"]) == r["M"]
    assert np.asarray(rows["weighted"]["weights"]).shape == (3, 3)  # 7x7 images, 5x5 patches
    for m in ("conv", "weighted"):
        (acc,) = _by_claim(mnist01, f"{m} reaches the thesis'")
        e0, n = 1 - conv_mnist01.THESIS[m], rows[m]["n_test"]
        bound = e0 + 2 * math.sqrt(max(e0 * (1 - e0), 1 / n) / n)
        assert acc["verdict"] == ("HOLDS" if rows[m]["error_rate"] <= bound else "does NOT hold")
        (err,) = _by_claim(mnist01, f"{m} makes fewer test errors than the RBF")
        assert err["verdict"] == _sign_verdict(rows[m]["wrong"], rows["rbf"]["wrong"])
    (blank,) = _by_claim(mnist01, "conv: a blank patch is evidence for a one")
    mean, sd = rows["conv"]["blank_patch"]
    assert blank["verdict"] == ("within noise" if abs(mean) <= 2 * sd else ("HOLDS" if mean > 0 else "does NOT hold"))
    text = conv_mnist01.format_report(mnist01)
    assert "DIFFERENT DATA" in text and "-1.51" in text and "99.7%" in text
    assert all(f"{c['claim']}: {c['verdict']}" in text for c in mnist01["claims"])
    with open(mnist01["files"]["csv"], newline="") as fh:
        assert len(list(csv.DictReader(fh))) == len(conv_mnist01.MODELS)


# theory ------------------------------------------------------------------------------------------
def _brute_conv_K(X, side, patch, lengthscale=1.0):
    """The convolutional kernel ('mean' scaling, SE base of variance 1) by explicit patch pairs."""
    imgs = X.reshape(len(X), side, side)
    q = side - patch + 1
    P = np.stack([imgs[:, i:i + patch, j:j + patch].reshape(len(X), -1) for i in range(q) for j in range(q)], 1)
    flat = P.reshape(-1, patch * patch)
    sq = (flat ** 2).sum(1)
    d2 = np.maximum(sq[:, None] + sq[None, :] - 2 * flat @ flat.T, 0.0)
    G = np.exp(-0.5 * d2 / lengthscale ** 2).reshape(len(X), q * q, len(X), q * q)
    return G.sum(axis=(1, 3)) / (q * q) ** 2, np.unique(flat, axis=0)


def test_theory_quick_through_the_cli(theory):
    text, result, out = theory
    assert "Lemmas 1-3" in text and all(f"{c['claim']}: {c['verdict']}" in text for c in result["claims"])
    verdicts = {c["claim"]: c["verdict"] for c in result["claims"]}
    for start in ("bound with all U unique patches = exact", "bound strictly below exact whenever",
                  "patches beyond the U unique ones add nothing", "inducing points at Z = X are exact",
                  "inducing points at rank W", "eq. 5.49", "rank K <= U, the blank patch counted",
                  "an SE kernel on the same"):
        hits = [v for c, v in verdicts.items() if c.startswith(start)]
        assert hits and set(hits) == {"HOLDS"}, start
    # the thesis' U = 25 for 28x28 single-pixel images and 5x5 patches leaves out the blank patch
    assert {v for c, v in verdicts.items() if c.startswith("rank K <= 25")} == {"does NOT hold"}
    big = next(s for s in result["single_pixel"] if s["image"] == "28x28")
    assert big["kernels"]["invariant"]["U"] == big["kernels"]["invariant"]["rank_K"] == 26
    for c in result["curves"]:
        gaps = np.asarray(c["gaps"])
        assert gaps[-1] == pytest.approx(0.0, abs=conv_theory.TOL_EXACT) and np.all(gaps[:-1] > conv_theory.TOL_EXACT)
        assert np.all(np.diff(c["curve"]) > -1e-8)  # nested inducing sets: the bound never falls
    with open(out / "conv_theory.csv", newline="") as fh:
        table = list(csv.DictReader(fh))
    assert {t["part"] for t in table} == {"bound_vs_M", "beyond_U", "points_at_X", "points_at_rank_W", "single_pixel"}


def test_theory_against_a_brute_force_kernel(theory):
    result = theory[1]
    cfg = conv_theory.QUICK
    N = min(cfg["sizes"])
    c = next(c for c in result["curves"] if c["N"] == N and c["kernel"] == "invariant")
    X, y = conv_theory.rectangle_outlines(N, cfg["side"], 0)
    K, U = _brute_conv_K(X, cfg["side"], cfg["patch"])
    assert c["U"] == len(U)
    A = K + conv_theory.HYPER["noise_variance"] * np.eye(N)
    lml = -0.5 * y @ np.linalg.solve(A, y) - 0.5 * np.linalg.slogdet(A)[1] - 0.5 * N * np.log(2 * np.pi)
    assert c["exact"] == pytest.approx(lml, rel=1e-10)
    small = next(s for s in result["single_pixel"] if s["image"] == f"{cfg['single_pixel'][0][0]}x"
                 f"{cfg['single_pixel'][0][0]}")
    side, patch = cfg["single_pixel"][0]
    Kp, Up = _brute_conv_K(np.eye(side * side), side, patch)
    assert small["kernels"]["invariant"]["U"] == len(Up) == (patch * patch + 1)
    assert small["kernels"]["invariant"]["rank_K"] == np.linalg.matrix_rank(Kp, tol=1e-10 * np.abs(Kp).max())


def test_theory_helpers_refuse_bad_input():
    with pytest.raises(ValueError, match="n must be"):
        conv_theory.rectangle_outlines(0, 8)
    with pytest.raises(ValueError, match="side must be"):
        conv_theory.rectangle_outlines(3, 2)


# shared helpers ----------------------------------------------------------------------------------
def test_common_paired_tests_and_claims():
    a = np.zeros(100, bool)
    b = np.zeros(100, bool)
    b[:12] = True
    assert cc.paired_errors("t", a, b)["verdict"] == "HOLDS"
    assert cc.paired_errors("t", b, a)["verdict"] == "does NOT hold"
    assert cc.paired_errors("t", a, a)["verdict"] == "within noise"
    rng = np.random.default_rng(0)
    la = rng.normal(-0.1, 0.01, 200)
    assert cc.paired_nlpp("t", la, la - 0.5)["verdict"] == "HOLDS"
    assert cc.paired_nlpp("t", la - 0.5, la)["verdict"] == "does NOT hold"
    assert cc.claim("t", None, "")["verdict"] == "n/a"
    with pytest.raises(ValueError, match="same test points"):
        cc.paired_errors("t", a, b[:5])
    with pytest.raises(ValueError, match="factor must be"):
        cc.average_pool(np.zeros((1, 784)), 28, 3)
    with pytest.raises(ValueError, match="Z must be"):
        cc.patch_glyphs(np.zeros((2, 5)), (3, 3))
    assert cc.jsonable({"a": np.arange(2), "b": np.float64(np.nan), "c": (np.bool_(True),)}) == \
        {"a": [0, 1], "b": None, "c": [True]}
    assert cc.average_pool(np.arange(16.0)[None], 4, 2).tolist() == [[2.5, 4.5, 10.5, 12.5]]
