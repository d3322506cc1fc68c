"""Jitted leaf of the random Fourier features: [cos P, sin P] * scale in one pass.

numpy's float64 ``cos`` and ``sin`` call the scalar C library here (~37 ns a value on this
machine); a feature matrix of 10^6 x 2,000 spends nearly all its time there. This loop reduces
x to r in [-pi/4, pi/4] with the two-part Cody-Waite constants of fdlibm (k pi/2 exact for
|k| < 2^20), evaluates the Cephes minimax polynomials for sin r and cos r (the same ones as the
C library, error under 1 ulp on that interval) and picks the quadrant with selects, so the loop
has no branch and vectorises: ~2 ns a cos/sin pair, within 2.3e-16 of numpy's values for
|x| < 10^6 (tests/test_random_feature_trig.py). Larger |x| (rare: projections of inputs that
were not standardised) are recomputed with the C library after the pass.

The module is public (not ``_loops``) so that the basis modules may import it
(tests/test_architecture.py).
"""

import math

import numpy as np

from gpexplorer._jit import njit_kernel_loop

#: |x| at and beyond which the C library computes cos x and sin x (k pi/2 is no longer exact)
REDUCTION_LIMIT = 1e6


@njit_kernel_loop
def cos_sin_columns(P, out, scale):
    """out[:, :m] = scale cos P, out[:, m:] = scale sin P for P [N, m] (out [N, 2m]); returns out."""
    n, m = P.shape
    for i in range(n):
        row = P[i]
        oc = out[i, :m]
        osn = out[i, m:]
        big = False
        for j in range(m):
            x = row[j]
            big |= abs(x) >= REDUCTION_LIMIT
            k = np.floor(x * 0.63661977236758134308 + 0.5)  # nearest multiple of pi/2
            r = (x - k * 1.57079632673412561417e+00) - k * 6.07710050650619224932e-11
            z = r * r
            s = r + r * z * (-1.66666666666666307295e-1 + z * (8.33333333332211858878e-3 + z * (
                -1.98412698295895385996e-4 + z * (2.75573136213857245213e-6 + z * (
                    -2.50507477628578072866e-8 + z * 1.58962301576546568060e-10)))))
            c = 1.0 - 0.5 * z + z * z * (4.16666666666665929218e-2 + z * (-1.38888888888730564116e-3 + z * (
                2.48015872888517045348e-5 + z * (-2.75573141792967388112e-7 + z * (
                    2.08757008419747316778e-9 + z * -1.13585365213876817300e-11)))))
            q = np.int64(k) & 3
            swap = (q & 1) == 1
            a = s if swap else c
            b = c if swap else s
            oc[j] = a * (-scale if (q == 1 or q == 2) else scale)
            osn[j] = b * (-scale if q >= 2 else scale)
        if big:
            for j in range(m):
                x = row[j]
                if abs(x) >= REDUCTION_LIMIT:
                    oc[j] = math.cos(x) * scale
                    osn[j] = math.sin(x) * scale
    return out
