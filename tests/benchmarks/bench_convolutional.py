#!/usr/bin/env python
"""Convolutional GPs (issue 26, "Performance"): gpexplorer's sparse variational ELBO + gradient with a
``Convolutional`` kernel and ``InducingPatches`` against GPflow 2.11's ``Convolutional`` +
``InducingPatches`` SVGP, side by side in one run; the rectangles fit and prediction; the patches
lab's two interactions; and the first call with an empty numba cache. One thread everywhere.

    python tests/benchmarks/bench_convolutional.py [--quick] [--no-gpflow] [--profile] [--out DIR]

1. **ELBO + gradient at equal M and batch** (the issue's floors: >= 3x GPflow at 28 x 28, 5 x 5
   patches, M = 50 and M = 750, batch 100, MNIST 0-vs-1; >= 20x on the rectangles, 3 x 3, M = 16,
   batch 100, which gpexplorer takes by its exact unique-patch path). Both sides: base SE kernel
   (variance 1, lengthscale 1), the "mean" scaling f = (1/P) sum_p g(x^[p]) (GPflow's only form;
   ``scaling="mean"`` on ours), no patch weights (ours ``weighted=False``; GPflow's weights, ones,
   set non-trainable), the same Z (``InducingPatches.from_images(..., init="random", seed=0)``),
   jitter 1e-6 on Kuu, probit Bernoulli by 20-point Gauss-Hermite quadrature, full q(u). A call
   is one minibatch ELBO + its gradient with respect to q, variance, lengthscale and Z, on the
   minibatch ``batches[i % K]`` of a seeded table both sides read (so no side re-uses a batch
   while its caches could hold it), the lengthscale moved by ~1e-12 relative per call. Ours:
   ``gpexplorer.variational.fitting.batch_elbo`` (what each Adam step evaluates), unwhitened q at
   the prior. GPflow (``conv_gpflow_side.py``, a worker in its venv): SVGP whitened (its default)
   at its default q (= the prior), loss + gradient in one ``tf.function``. Timing by
   ``equal_timing``: the same number of alternating single calls per side, min and median, the
   worker timing its own call; first calls (numba compilation, tracing) never timed.
   **The same ELBO**: GPflow's exact-probit Bernoulli (its default link squashes Phi into
   [1e-3, 1 - 1e-3]) on batch 0 (a) whitened, at its default q, against ours at q = p(u) (our
   start); (b) unwhitened (``whiten=False``) with q_mu, q_sqrt copied from a random valid q(u)
   = N(Lk v, Lk W W^T Lk^T) set on ours by ``posterior.set_moments``: values to 1e-6 relative
   (exit status 1 otherwise), gradients (variance, lengthscale, Z) and predict_f on 10 test images.
2. **Rectangles**: ``fit(method="adam", max_iter=2000, batch_size=100)`` at M = 16 (target < 60 s)
   and ``predict_y`` on 1,000 test images (target < 2 s; alternating with GPflow's ``predict_y`` in
   chunks of 100 images, its [N, P, P] Kdiag being 3.7 GB for 1,000 images at once).
3. **The lab**: moving one inducing patch -> the new ELBO and predictions (target < 150 ms), and
   one drawn 28 x 28 digit classified (target < 150 ms). Details of 2 and 3: ``conv_bench_parts.py``.
4. **First call**: a fresh process with an empty ``NUMBA_CACHE_DIR`` (import, model, first and
   second call); GPflow's import and first (tracing) call beside.

``--quick``: the rectangles cell and MNIST at M = 50 with batch 10 on 100 images, two calls per
side, a 10-step fit, 200 predicted images, a small digit model; the first call runs beside the
other cells; no target assessed (``tests/test_conv_bench_smoke.py`` runs it without GPflow).

``--profile`` (and any missed ELBO target) adds a cProfile of our call split by the kernel's
methods (Kdiag, Kuf, their gradients, Kuu) and the rest of the ELBO. The load average is taken
before and after every figure. Results: ``DIR/conv_bench.json`` and ``DIR/conv_bench.csv``
(default DIR ``.benchmarks/convolutional``, ignored by git) and a markdown report on stdout.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_sparse  # noqa: E402  (first: pins every thread pool before numpy is imported)

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import tempfile  # noqa: E402

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

import conv_bench_parts as parts  # noqa: E402
import conv_gpflow_side  # noqa: E402
import equal_timing  # noqa: E402
from conv_bench_parts import CSV_COLUMNS, LENGTHSCALE, SEED, batch_elbo, loadavg, row  # noqa: E402
from sparse_bench_interleaved import peer_pythons, remote_side  # noqa: E402
from sparse_bench_report import _jsonable  # noqa: E402

VALUE_RTOL = 1e-6
#: name -> (data set, patch side, M, batch, training images (None: all)), required speed-up over GPflow,
#: calls per side: (budget s, min, max) for equal_timing.calls_for, or a count
CASES = {"rectangles-3x3-M16": (("rectangles", 3, 16, 100, None), 20.0, (60.0, 8, 60)),
         "mnist01-5x5-M50": (("mnist01", 5, 50, 100, None), 3.0, (60.0, 6, 40)),
         "mnist01-5x5-M750": (("mnist01", 5, 750, 100, None), 3.0, (100.0, 5, 20))}
QUICK_CASES = {"rectangles-3x3-M16": (("rectangles", 3, 16, 100, None), None, 2),
               "mnist01-5x5-M50-B10-N100": (("mnist01", 5, 50, 10, 100), None, 2)}
#: the first call with an empty numba cache: these cases (quick: the first, run beside the other cells)
FIRST_CALL_CASES = ("rectangles-3x3-M16", "mnist01-5x5-M50")
DEFAULT_OUT = Path(__file__).resolve().parents[2] / ".benchmarks" / "convolutional"


# ------------------------------------------------------------------------------------------
# 1. ELBO + gradient against GPflow
def _rel(a, b):
    a, b = np.ravel(np.asarray(a, dtype=float)), np.ravel(np.asarray(b, dtype=float))
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def agreement(model, worker, data, table, X_pred):
    """Both checks of the module docstring, on batch 0 (ours at its start q = p(u) first)."""
    check = worker.ask({"kind": "check", "data": data, "n_pred": len(X_pred)})
    model.set_parameters(**{"kernel0.base.lengthscale": LENGTHSCALE})
    model.reset_posterior(SEED)
    prior = batch_elbo(model, table[0], None)[0]
    mu, L = parts.random_q(model)
    model.posterior.set_moments([mu], [L])
    value, g = batch_elbo(model, table[0], None)
    mean, var = model.predict_f(X_pred)
    model.reset_posterior(SEED)
    names = {"variance": "kernel0.base.variance", "lengthscale": "kernel0.base.lengthscale", "Z": "feature0.Z"}
    out = {"elbo_prior": prior, "gpflow_elbo_prior_whitened": check["elbo_whitened_prior"],
           "rel_diff_prior": _rel(prior, check["elbo_whitened_prior"]), "elbo_q": value,
           "gpflow_elbo_q_unwhitened": check["elbo_q"], "rel_diff_q": _rel(value, check["elbo_q"]),
           "gpflow_kl_q": check["kl"],
           "gradient_rel_diff": {n: _rel(g[ours], -np.asarray(check[f"grad_{n}"])) for n, ours in names.items()},
           "predict_f_rel_diff": max(_rel(mean[:, 0], check["pred_mean"]), _rel(var[:, 0], check["pred_var"]))}
    out["agree"] = bool(max(out["rel_diff_prior"], out["rel_diff_q"]) <= VALUE_RTOL)
    return out


def elbo_cell(name, spec, worker, directory, calls=None, log=None):
    """Our minibatch ELBO + gradient against GPflow's (or alone), the same number of alternating calls."""
    (dataset, patch, M, B, n_train), target, budget = spec
    model, k = parts.build_model(dataset, patch, M, n_train)
    X, X_test = model.X, parts.load(dataset)[2]
    table = parts.batch_table(len(X), B)
    sides = {"gpexplorer": parts.ours_side(model, table)}
    if worker is not None:
        data = parts.write_case(directory, name, model, table, X_test[:10], q=parts.random_q(model))
        sides["GPflow"] = remote_side(worker, {"kind": "eval", "data": data})
    la0 = loadavg()
    if calls or not isinstance(budget, tuple):
        out = equal_timing.compare(sides, calls or budget, log=log)
    else:
        out = equal_timing.compare(sides, None, *budget, log=log)
    cell = {"case": name, "dataset": dataset, "patch": patch, "M": M, "batch": B, "N": len(X),
            "P": k.layout.n_patches, "route": k._route(X[table[0]]), "calls": out["calls"], "sides": out["sides"],
            "target": target, "load_start": la0, "load_end": loadavg()}
    if worker is not None:
        r = equal_timing.ratios(out["times"], "GPflow", "gpexplorer")
        cell.update(speedup=r, met=None if target is None else bool(r["min"] >= target),
                    gpflow_first_ms=worker.ask({"kind": "eval", "data": data, "repeats": 0})["first_ms"])
        cell["agreement"] = agreement(model, worker, data, table, X_test[:10])
    return cell, model, table


def elbo_rows(results, cell):
    common = dict(section="elbo+gradient", case=cell["case"], load_start=cell["load_start"], load_end=cell["load_end"])
    sp = cell.get("speedup") or {}
    row(results, side="gpexplorer", summary=cell["sides"]["gpexplorer"], note=f"route {cell['route']}",
        speedup_min=sp.get("min"), speedup_median=sp.get("median"), target=cell["target"], met=cell.get("met"),
        **common)
    if "GPflow" in cell["sides"]:
        row(results, side="GPflow", summary=cell["sides"]["GPflow"],
            note=f"first call (tracing) {cell['gpflow_first_ms']:.0f} ms", **common)


# ------------------------------------------------------------------------------------------
def run(quick=False, with_gpflow=True, calls=None, profile=False, first_call=True, log=print):
    cases = QUICK_CASES if quick else CASES
    results = {"quick": quick, "environment": bench_sparse.environment(), "load_average_start": equal_timing.loadavg(),
               "elbo_cells": [], "rows": [], "failures": []}
    first = {n: CASES[n][0] for n in FIRST_CALL_CASES[:1 if quick else None]} if first_call else {}
    started = {n: parts.start_first_call(c) for n, c in first.items()} if quick else {}  # beside the rest
    python = peer_pythons(["gpflow"]).get("gpflow") if with_gpflow else None
    if with_gpflow and python is None:
        log("# GPflow: no venv (see README.md; $GPFLOW_PYTHON): skipped", file=sys.stderr)
    results["gpflow_ran"] = bool(python)
    worker = conv_gpflow_side.ConvPeer("gpflow", python) if python else None
    directory = tempfile.TemporaryDirectory(prefix="bench-conv-")
    try:
        if worker is not None:
            results["gpflow_info"] = worker.ask({"kind": "info"})
        for name, spec in cases.items():
            log(f"# {name}: ELBO + gradient, alternating single calls ...", file=sys.stderr)
            cell, model, table = elbo_cell(name, spec, worker, directory.name, calls,
                                           log=lambda s: log(s, file=sys.stderr))
            if profile or cell.get("met") is False:
                cell["profile"] = parts.profile_call(parts.ours_side(model, table).call, calls=1 if quick else 3)
            results["elbo_cells"].append(cell)
            elbo_rows(results, cell)
            agree = cell.get("agreement")
            if agree is not None and not agree["agree"]:
                results["failures"].append(f"{name}: ELBO differs from GPflow's ({agree})")
        log("# rectangles: Adam fit, prediction, the lab's patch move ...", file=sys.stderr)
        results["rectangles"] = parts.rectangles_section(results, worker, directory.name, quick, calls)
        log("# the drawn digit ...", file=sys.stderr)
        results["digit"] = parts.digit_section(results, quick, calls)
    finally:
        if worker is not None:
            worker.close()
        directory.cleanup()
    if first:
        log("# first call with an empty numba cache (fresh process) ...", file=sys.stderr)
        results["first_call"] = parts.first_call_section(results, first, started)
    results["load_average_end"] = equal_timing.loadavg()
    return results


def _ms(s):
    return "-" if not s else f"{s['min']:.1f} ({s['median']:.1f})"


def _load(a, b):
    return f"{a if a is not None else '?'} -> {b if b is not None else '?'}"


def _met(flag):
    return "" if flag is None else ("yes" if flag else "**NO**")


def _header(results):
    env = results["environment"]
    blas = ", ".join(f"{p.get('internal_api')} {p.get('version')} {p.get('architecture')} x{p.get('num_threads')}"
                     for p in env.get("threadpools", []) if p.get("internal_api") in ("openblas", "mkl", "blis"))
    la = [("?" if v is None else "/".join(f"{x:.2f}" for x in v)) for v in
          (results["load_average_start"], results.get("load_average_end"))]
    text = (f"Load average (1/5/15 min) {la[0]} at the start, {la[1]} at the end; 2 cores, other work beside. "
            f"numpy {env['numpy']}, numba {env['numba']}, BLAS {blas or '?'}, one thread per process.")
    if env.get("git_commit"):
        text += f" gpexplorer {env['git_commit']}" + (" + uncommitted changes in gpexplorer/" if
                                                      env.get("gpexplorer_uncommitted_changes") else "") + "."
    info = results.get("gpflow_info")
    if info:
        text += f" GPflow {info.get('version')} (numpy {info.get('numpy')}), its own venv."
    return text + (" QUICK MODE: small cases, targets not assessed." if results["quick"] else "")


def format_markdown(results):
    lines = ["## Convolutional GPs: gpexplorer against GPflow 2.11 (issue 26)", "", _header(results), "",
             "### ELBO + gradient, one minibatch (ms, min (median) over the same number of alternating calls)", "",
             "| case | N | P | M | batch | our route | calls | gpexplorer | GPflow 2.11 | speed-up min / median | "
             "target | met | load (1 min) |", "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|:---:|---|"]
    for c in results["elbo_cells"]:
        sp = c.get("speedup")
        lines.append(f"| {c['case']} | {c['N']} | {c['P']} | {c['M']} | {c['batch']} | {c['route']} | {c['calls']} | "
                     f"{_ms(c['sides']['gpexplorer'])} | {_ms(c['sides'].get('GPflow'))} | "
                     + (f"{sp['min']:.2f}x / {sp['median']:.2f}x" if sp else "-") + " | "
                     + ("" if c["target"] is None else f">= {c['target']:g}x") + f" | {_met(c.get('met'))} | "
                     f"{_load(c['load_start'], c['load_end'])} |")
    checked = [c for c in results["elbo_cells"] if "agreement" in c]
    if checked:
        lines += ["", "The same ELBO on batch 0 (GPflow with the exact probit; relative differences):", "",
                  "| case | ours at q = p(u) | GPflow whitened, default q | rel. diff | ours at a random q | "
                  "GPflow whiten=False, same q | rel. diff | gradient var / ls / Z | predict_f |",
                  "|---|---:|---:|---:|---:|---:|---:|---|---:|"]
        for c in checked:
            a, g = c["agreement"], c["agreement"]["gradient_rel_diff"]
            lines.append(f"| {c['case']} | {a['elbo_prior']:.10g} | {a['gpflow_elbo_prior_whitened']:.10g} | "
                         f"{a['rel_diff_prior']:.1e} | {a['elbo_q']:.10g} | {a['gpflow_elbo_q_unwhitened']:.10g} | "
                         f"{a['rel_diff_q']:.1e} | {g['variance']:.0e} / {g['lengthscale']:.0e} / {g['Z']:.0e} | "
                         f"{a['predict_f_rel_diff']:.0e} |")
    lines += ["", "### Rectangles and the lab (gpexplorer; GPflow where it does the same)", "",
              "| figure | gpexplorer | GPflow 2.11 | target | met | load (1 min) |", "|---|---:|---:|---:|:---:|---|"]
    rect = results.get("rectangles", {})
    fit, pred, mv = rect.get("fit"), rect.get("predict"), rect.get("lab_move")
    if fit:
        lines.append(f"| fit: {fit['steps']} Adam steps, batch 100, M = 16 (of which the trace's full-data ELBO: "
                     f"{fit['trace_elbo_s']:.1f} s in {fit['trace_elbo_calls']} calls; then test error "
                     f"{fit['test_error']:.3f}, ELBO {fit['elbo']:.1f}) | {fit['seconds']:.1f} s | - | "
                     + ("" if fit["target_s"] is None else f"< {fit['target_s']:g} s") +
                     f" | {_met(fit['met'])} | {_load(fit['load_start'], fit['load_end'])} |")
    if pred:
        ratio = pred.get("speedup")
        lines.append(f"| predict_y on {pred['images']} test images, ms ({pred['calls']} calls each"
                     + (f"; {ratio['min']:.1f}x GPflow" if ratio else "") + f") | {_ms(pred['sides']['gpexplorer'])} | "
                     f"{_ms(pred['sides'].get('GPflow'))} | " + ("" if pred["target_ms"] is None else
                     f"< {pred['target_ms']:g} ms") + f" | {_met(pred['met'])} | "
                     f"{_load(pred['load_start'], pred['load_end'])} |")
    if mv:
        p = mv["parts_ms"]
        for side, s in mv["sides"].items():
            label = {"move": f"move one inducing patch -> ELBO (N = {mv['N']}: {_ms(p['elbo_ms'])}) + predict_y "
                             f"({mv['view_images']} images: {_ms(p['predict_ms'])}), ms"}.get(side, f"  {side}, ms")
            target = "" if mv["target_ms"] is None or side != "move" else f"< {mv['target_ms']:g} ms"
            lines.append(f"| {label} | {_ms(s)} | - | {target} | {_met(mv['met']) if side == 'move' else ''} | "
                         f"{_load(mv['load_start'], mv['load_end'])} |")
    d = results.get("digit")
    if d:
        lines.append(f"| classify one drawn 28 x 28 digit (10 classes, M = {d['M']}, {d['adam_steps']} Adam steps "
                     f"in {d['fit_s']:.1f} s, test error {d['test_error']:.2f} on {d['n_test']}), ms | "
                     f"{_ms(d['classify'])} | - | " + ("" if d["target_ms"] is None else f"< {d['target_ms']:g} ms")
                     + f" | {_met(d['met'])} | {_load(d['load_start'], d['load_end'])} |")
    lines += _first_call_lines(results) + _profile_lines(results)
    missed = [r for r in results["rows"] if r.get("met") is False]
    lines += ["", "Targets missed: " + ("; ".join(f"{r['section']} {r['case']}" for r in missed) or "none") + "."]
    if results["failures"]:
        lines += ["", "FAILURES: " + "; ".join(results["failures"])]
    return "\n".join(lines)


def _first_call_lines(results):
    fc = results.get("first_call")
    if not fc and not results.get("gpflow_info"):
        return []
    lines = ["", "### First call", "", "| side | case | import s | model / tracing s | first call s | next call ms | "
             "load (1 min) |", "|---|---|---:|---:|---:|---:|---|"]
    for name, f in (fc or {}).items():
        if "error" in f:
            lines.append(f"| gpexplorer, empty NUMBA_CACHE_DIR | {name} | failed: {f['error'][-200:]!r} | | | | |")
            continue
        lines.append(f"| gpexplorer, empty NUMBA_CACHE_DIR ({f['numba_cache_files_written']} cache files written"
                     + ("; run beside the other cells" if f.get("ran_beside_the_benchmark") else "") + f") | {name} | "
                     f"{f['import_s']:.2f} | {f['model_s']:.2f} | {f['first_call_s']:.2f} | "
                     f"{1e3 * f['second_call_s']:.0f} | {_load(f['load_start'], f.get('load_end'))} |")
    info = results.get("gpflow_info")
    for c in results["elbo_cells"] if info else []:
        lines.append(f"| GPflow (import in its worker; the first call traces) | {c['case']} | "
                     f"{info.get('import_seconds', float('nan')):.2f} | - | {1e-3 * c['gpflow_first_ms']:.2f} | "
                     f"{c['sides']['GPflow']['median']:.0f} | {_load(c['load_start'], c['load_end'])} |")
    return lines


def _profile_lines(results):
    lines = []
    for c in results["elbo_cells"]:
        prof = c.get("profile")
        if not prof:
            continue
        lines += ["", f"### Where our call goes: {c['case']} (cProfile, {prof['calls']} calls, "
                  f"{prof['ms_per_call']:.1f} ms per call profiled)", "", "| part | function | ms / call | share |",
                  "|---|---|---:|---:|"]
        lines += [f"| {p['part']} | {p['function']} | {p['ms']:.1f} | {100 * p['share']:.0f}% |" for p in prof["parts"]]
        lines += ["", "```", prof["top"].rstrip(), "```"]
    return lines


def write_outputs(results, out_dir):
    import csv

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "conv_bench.json").write_text(json.dumps(_jsonable(results), indent=2, default=str))
    with open(out_dir / "conv_bench.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
        w.writeheader()
        for r in results["rows"]:
            w.writerow({k: ("" if r.get(k) is None else r[k]) for k in CSV_COLUMNS})
    return out_dir


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small cases, two calls per side: a smoke run")
    parser.add_argument("--no-gpflow", action="store_true", help="gpexplorer only, no GPflow worker")
    parser.add_argument("--calls", type=int, help="timed calls per side and cell, the same for every side "
                        "(default: as many as fit each cell's budget of alternating rounds)")
    parser.add_argument("--profile", action="store_true", help="cProfile our ELBO + gradient in every cell")
    parser.add_argument("--no-first-call", action="store_true", help="skip the fresh-numba-cache first call")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help=f"results directory (default {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    with threadpool_limits(limits=1):  # scoped: a caller (the smoke test's pytest process) gets its pools back
        results = run(quick=args.quick, with_gpflow=not args.no_gpflow, calls=args.calls, profile=args.profile,
                      first_call=not args.no_first_call)
    print(format_markdown(results))
    out = write_outputs(results, args.out)
    print(f"\n(results written to {out}/conv_bench.json and conv_bench.csv)", file=sys.stderr)
    return 1 if results["failures"] else 0


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # the GPflow worker inherits it
    sys.exit(main())
