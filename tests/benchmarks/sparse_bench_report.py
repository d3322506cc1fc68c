"""Markdown for ``bench_sparse.py``'s results (the tables its README section shows), and JSON
conversion."""

from __future__ import annotations

import gc
import json
import math
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from sparse_bench_cells import *  # noqa: F401,F403  (constants named in the tables)


# ------------------------------------------------------------------------------------------
def _yes(flag):
    return "yes" if flag else "**NO**"


def format_markdown(results):
    env = results["environment"]
    lines = []
    gpy_v = env.get("GPy", "not installed")
    lines.append(f"## gpexplorer {env['gpexplorer']} vs GPy {gpy_v}: sparse GP objective + gradient")
    lines.append("")
    tp = "threadpoolctl limits=1" if env["threadpoolctl"] else "threadpoolctl not used (env vars only)"
    pinned = "OMP/OPENBLAS/MKL/NUMBA_NUM_THREADS=1" if env["threads_pinned_by_env"] else "env NOT pinned (numpy imported first)"
    lines.append(f"One thread ({pinned}; {tp}; numba threads {env['numba_threads']}). Python {env['python']}, "
                 f"numpy {env['numpy']}, scipy {env['scipy']}, numba {env['numba']}, {env['cpu_count']} CPUs.")
    la0, la1 = results.get("load_average_start"), results.get("load_average_end")
    if la0 and la1:
        lines.append(f"Load average (1/5/15 min) at start {la0[0]:.2f}/{la0[1]:.2f}/{la0[2]:.2f}, "
                     f"at end {la1[0]:.2f}/{la1[1]:.2f}/{la1[2]:.2f} (other processes share the CPUs).")
    if env.get("git_commit"):
        dirty = env.get("gpexplorer_uncommitted_changes")
        lines.append(f"gpexplorer at commit {env['git_commit']}"
                     + (f" plus uncommitted changes to {', '.join(dirty)}." if dirty else " (clean)."))
    lines.append("Objective + gradient w.r.t. variance, lengthscale, noise variance and every Z; every side gets the "
                 "same number of timed single calls, alternating (equal_timing), min / median ms; "
                 f"jitter {JITTER:g} on Kuu everywhere." + (" QUICK MODE." if results["quick"] else ""))
    lines.append("")
    lines.append("| approx | N | M | gpexplorer ms | GPy ms | speed-up (min / median) | target | met | calls per side "
                 "| log ML rel. diff | FD max rel. err | FD err / max grad | F round-off | FD check |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|:---:|---:|---:|---:|---:|---:|:---:|")
    for c in results["cells"]:
        fdc = c["gpexplorer"]["fd_check"]
        fd = f"{fdc['max_rel_err']:.1e} | {fdc['max_scaled_err']:.1e} | {fdc['roundoff']:.1e} | " + (
            ("ok" + (f" ({len(fdc['noise_limited'])}/{len(fdc['entries'])} noise-limited)"
                     if fdc["noise_limited"] else ""))
            if fdc["passed"] else "**FAIL**")
        compare = c.get("compare", {})
        sides = compare.get("sides", {})
        g = _min_median(sides.get("gpexplorer"))
        if "gpy" in sides:
            lines.append(f"| {c['approximation'].upper()} | {c['N']} | {c['M']} | {g} | {_min_median(sides['gpy'])} | "
                         f"{c['speedup']:.2f}x / {c['speedup_median']:.2f}x | >={c['target']:g}x | "
                         f"{_yes(c['target_met'])} | {compare.get('calls', '-')} | {c['lml_rel_diff']:.1e} | {fd} |")
        else:
            lines.append(f"| {c['approximation'].upper()} | {c['N']} | {c['M']} | {g} | - | - | "
                         f">={c['target']:g}x | - | {compare.get('calls', '-')} | - | {fd} |")
    if results.get("efficiency"):
        lines.append("")
        lines.append(f"### Dense-flop efficiency at N={SIZES[-1][0]}, M={SIZES[-1][1]}")
        lines.append("")
        lines.append(f"Machine: {MATMUL_N}x{MATMUL_N} @ {MATMUL_N}x{MATMUL_N} float64 np.matmul, one thread, timed as one "
                     "more side in the same alternating rounds as the cell (min against min; medians in brackets).")
        lines.append("Flops counted: only the dominant O(M^2 N) dense work; "
                     + "; ".join(f"{a.upper()} ~ {f}" for a, f in FLOP_FORMULA.items()) + ".")
        lines.append("")
        lines.append("| approx | GFLOP counted | GEMM GFLOP/s | gpexplorer GFLOP/s | gpexplorer % of GEMM | GPy GFLOP/s "
                     "| GPy % of GEMM |")
        lines.append("|---|---:|---:|---:|---:|---:|---:|")
        for e in results["efficiency"]:
            g, p, mm = e.get("gpexplorer"), e.get("gpy"), e["gemm"]
            gpy_cols = (f"{p['gflops']:.2f} | {100 * p['fraction_of_matmul']:.1f}% "
                        f"({100 * p['fraction_of_matmul_median']:.1f}%)") if p else "- | -"
            lines.append(f"| {e['approximation'].upper()} | {e['gflop']:.2f} | {mm['gflops']:.1f} "
                         f"({mm['gflops_median']:.1f}) | {g['gflops']:.2f} | {100 * g['fraction_of_matmul']:.1f}% "
                         f"({100 * g['fraction_of_matmul_median']:.1f}%) | {gpy_cols} |")
    if results.get("optimisation"):
        lines.append("")
        lines.append(f"### Joint optimisation on Snelson (N=200, M={SNELSON_M}; variance, lengthscale, noise, Z)")
        lines.append("")
        lines.append("Start: variance 1, lengthscale 0.5, noise 0.09, Z evenly spaced over the data. "
                     "gpexplorer `fit(max_iter)` (L-BFGS-B, log-parameters) vs GPy `optimize('lbfgsb', max_iters)` "
                     "(L-BFGS-B, softplus-parameters; GPy also caps function evaluations at max_iters). "
                     "NLML = -log marginal likelihood (VFE: -bound) at the end. Wall time: min / median over "
                     "whole optimisations, each from a fresh model, the same number per library, alternating; "
                     "speed-up: min over min.")
        lines.append("")
        lines.append("| approx | run | gpexplorer s | GPy s | speed-up | target | met | per-eval speed-up "
                     "| gpexplorer NLML | GPy NLML | gpexplorer iters/evals | GPy iters/evals | fits per side |")
        lines.append("|---|---|---:|---:|---:|---:|:---:|---:|---:|---:|---:|---:|---:|")
        for o in results["optimisation"]:
            g, p = o["gpexplorer"], o.get("gpy")
            if p:
                lines.append(f"| {o['approximation'].upper()} | {o['label']} (max {o['max_iter']}) | "
                             f"{g['min_seconds']:.4f} / {g['seconds']:.4f} | {p['min_seconds']:.4f} / {p['seconds']:.4f} | "
                             f"{o['speedup']:.1f}x | >={o['target']:g}x | {_yes(o['target_met'])} | "
                             f"{o['speedup_per_eval']:.1f}x | {g['nlml']:.4f} | {p['nlml']:.4f} | "
                             f"{g['n_iter']}/{g['n_eval']} | {p['n_iter']}/{p['n_eval']} | {g['repeats']} |")
            else:
                lines.append(f"| {o['approximation'].upper()} | {o['label']} (max {o['max_iter']}) | "
                             f"{g['min_seconds']:.4f} / {g['seconds']:.4f} | - | - | "
                             f">={OPTIMISATION_TARGET:g}x | - | - | {g['nlml']:.4f} | - | {g['n_iter']}/{g['n_eval']} | - | "
                             f"{g['repeats']} |")
    lines += format_comparison(results)
    lines.append("")
    lines.append(f"FD: Richardson-extrapolated central differences (steps {FD_STEP:g}, {2 * FD_STEP:g}; log space "
                 "for variance, lengthscale, noise; the two Z with the largest |gradient|) against gpexplorer's "
                 "analytic gradient. 'FD max rel. err' = max over the 5 entries of |fd - an| / max(|fd|, |an|); "
                 "'FD err / max grad' = max |fd - an| / max |an|. Pass: every |fd - an| <= "
                 f"{FD_TOL:g} max|an| + {FD_NOISE_FACTOR:g} x 0.75 (F round-off)/step. F round-off = spread of F "
                 "over lengthscales 1e-14 relative apart; 'noise-limited' = entries where that round-off allowance "
                 f"exceeds {FD_TOL:g} of the entry itself. Gradients are not compared with GPy.")
    if results["failures"]:
        lines.append("")
        lines.append("**Correctness failures:** " + "; ".join(results["failures"]))
    return "\n".join(lines)


def _min_median(side):
    return f"{side['min']:.3f} / {side['median']:.3f}" if side else "-"


def _jsonable(obj):
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return repr(obj)
    return obj


def format_comparison(results):
    """Markdown for the comparison with the workers, the targets and the N = 10^6 runs."""
    lines = []
    names = [n for n in ("gpexplorer", "baseline", "gpflow", "gpytorch")
             if any(n in c.get("compare", {}).get("sides", {}) for c in results["cells"])]
    if len(names) > 1:
        info = results.get("workers", {})
        label = {"gpexplorer": "gpexplorer", "baseline": "pre-move", "gpflow": f"GPflow {info.get('gpflow', '')}".strip(),
                 "gpytorch": f"GPyTorch {info.get('gpytorch', '')}".strip()}
        lines += ["", "### Against the workers: alternating single calls, the same number per side (min / median ms)",
                  "",
                  "| approx | N | M | calls per side | " + " | ".join(label[n] for n in names)
                  + " | speed-up over GPflow (min / median) | log ML rel. diff vs GPflow |",
                  "|---|---:|---:|---:|" + "---:|" * len(names) + "---:|---:|"]
        for c in results["cells"]:
            sides, lml = c.get("compare", {}).get("sides", {}), c.get("compare", {}).get("log_marginal_likelihood", {})
            cols = [f"{sides[n]['min']:.3f} / {sides[n]['median']:.3f}" if n in sides else "-" for n in names]
            su = (f"{sides['gpflow']['min'] / sides['gpexplorer']['min']:.2f}x / "
                  f"{sides['gpflow']['median'] / sides['gpexplorer']['median']:.2f}x" if "gpflow" in sides else "-")
            diff = (f"{abs(lml['gpflow'] - lml['gpexplorer']) / abs(lml['gpexplorer']):.1e}" if "gpflow" in lml else "-")
            lines.append(f"| {c['approximation'].upper()} | {c['N']} | {c['M']} | {c.get('compare', {}).get('calls', '-')} | "
                         + " | ".join(cols) + f" | {su} | {diff} |")
    fits = results.get("fits")
    if fits:
        lines += ["", f"### Snelson VFE fit to convergence (N={fits['N']}, M={fits['M']}, max {fits['max_iter']} "
                  "iterations; whole fits, s, min / median, the same number per side, alternating)", "",
                  "| side | min | median | fits | NLML | iters/evals |",
                  "|---|---:|---:|---:|---:|---:|"]
        for n, v in fits["sides"].items():
            lines.append(f"| {n} | {v['min']:.4f} | {v['median']:.4f} | {v['n']} | {v['nlml']:.6f} | "
                         f"{v['n_iter']}/{v['n_eval']} |")
    big = results.get("big")
    if big:
        lines += ["", f"### N={big['N']}, M={big['M']} {big['approximation'].upper()}: one objective + gradient, "
                  "fresh process each", "", "| side | seconds (min of 2 after the first) | first call s | peak RSS MB "
                  "| RSS with data loaded MB |", "|---|---:|---:|---:|---:|"]
        for n, v in big["sides"].items():
            if "error" in v:
                lines.append(f"| {n} | failed: {v['error'][-120:]} | | | |")
            else:
                lines.append(f"| {n} | {v['seconds']:.2f} | {v['first_seconds']:.2f} | {v['peak_rss_mb']:.0f} | "
                             f"{v['rss_data_mb']:.0f} |")
    if results.get("targets"):
        lines += ["", "### Targets (issue 13, item 11)", "", "| target | measured | required | met |", "|---|---:|---:|:---:|"]
        for t in results["targets"]:
            req = f"<= {t['threshold']:g}" if t.get("at_most") else f">= {t['threshold']:g}"
            lines.append(f"| {t['target']} | {t['value']:.3f} | {req} | {_yes(t['met'])} |")
    return lines
