"""Every compiled path, recompiled with numba's bounds checking, in a fresh process.

numba does not check array bounds by default: an out-of-range read returns whatever memory
holds and shows up as a rare NaN. This runs the fused and generic objective paths, the upper
bound, predictions and every kernel's gradients with NUMBA_BOUNDSCHECK=1 and an empty cache, and
then the blocked paths of large N and M (tests/test_workspace.py's sizes) in the same process, so
the checked code is compiled once (two processes took 46 s and 42 s, most of it compiling).
"""

import os
import subprocess
import sys
import textwrap

import pytest
from test_workspace import M_LARGE, N_LARGE

pytestmark = pytest.mark.slow

SCRIPT = textwrap.dedent(f"""
    import numpy as np
    from gpexplorer import kernels, models
    rng = np.random.default_rng(0)
    for D in (1, 3):
        X = rng.normal(size=(30, D)); y = rng.normal(size=30); Z = rng.normal(size=(6, D))
        ks = [cls() for cls in kernels.KERNELS.values() if cls.input_shape is None]
        ks.append(kernels.SquaredExponential() + kernels.Matern32())
        for k in ks:
            for approximation in ("sor", "dtc", "fitc", "vfe"):
                m = models.SparseGPR(X, y, kernel=k, Z=Z, approximation=approximation, noise_variance=0.1)
                _, g = m.log_marginal_likelihood(eval_gradient=True)
                assert all(np.all(np.isfinite(v)) for v in g.values()), (type(k).__name__, approximation)
                m.predict_f(X[:4], full_cov=True)
            _, g = m.upper_bound(eval_gradient=True)
            assert all(np.all(np.isfinite(v)) for v in g.values())
            e = models.ExactGPR(X, y, kernel=k, noise_variance=0.1)
            e.log_marginal_likelihood(eval_gradient=True)
            k.grad_X(rng.normal(size=(30, 30)), X)
    for D in (1, 2):  # the blocked paths of large N and M
        X = rng.normal(size=({N_LARGE}, D)); y = rng.normal(size={N_LARGE}); Z = rng.normal(size=({M_LARGE}, D))
        for k in (kernels.SquaredExponential(), kernels.Matern32(), kernels.RationalQuadratic()):
            for approximation in ("dtc", "fitc", "vfe"):
                m = models.SparseGPR(X, y, kernel=k, Z=Z, approximation=approximation, noise_variance=0.1)
                _, g = m.log_marginal_likelihood(eval_gradient=True)
                assert all(np.all(np.isfinite(v)) for v in g.values()), (type(k).__name__, approximation, "large")
                m.predict_f(X[:4])
    print("ok")
""")


def test_compiled_code_stays_in_bounds(tmp_path):
    env = dict(os.environ, NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=str(tmp_path))
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]
