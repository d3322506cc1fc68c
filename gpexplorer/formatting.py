"""Numbers as the pages and badges print them: by magnitude, never a 134-digit float nor a
"0.00" for 8.67e-05. Plain Python; the inference code's badges and every lab's readouts
(``gpexplorer.ui.markup`` re-exports both functions) use the same rules."""

from __future__ import annotations

import math

__all__ = ["format_number", "format_correlation"]

#: fixed notation between these magnitudes, scientific outside
FIXED_RANGE = (1e-3, 1e6)


def format_number(value, digits: int = 3) -> str:
    """``value`` at ``digits`` significant digits, by magnitude.

    Moderate magnitudes (1e-3 <= |v| < 1e6) in fixed notation with at least ``digits``
    significant digits and at least two decimals (log likelihoods differ in their hundredths):
    ``-51.826 -> "-51.83"``, ``0.7 -> "0.700"``, ``0.0123 -> "0.0123"``. Tiny and huge ones in
    scientific notation with ``digits`` significant digits: ``8.67e-05 -> "8.67e-05"``,
    ``5.3e133 -> "5.30e+133"``. Zero is ``"0"``; None and NaN ``"n/a"``; infinities ``"inf"``,
    ``"-inf"``."""
    if value is None:
        return "n/a"
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(v):
        return "n/a"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == 0.0:
        return "0"
    magnitude = abs(v)
    if FIXED_RANGE[0] <= magnitude < FIXED_RANGE[1]:
        decimals = max(2, digits - 1 - math.floor(math.log10(magnitude)))
        return f"{v:.{decimals}f}"
    return f"{v:.{digits - 1}e}"


def format_correlation(value, max_decimals: int = 10) -> str:
    """A correlation in [-1, 1] with enough decimals to tell it from +-1 (two significant
    digits of 1 - |c|), at most ``max_decimals``: ``0.9999113 -> "0.999911"``,
    ``0.99999982 -> "0.99999982"``, ``0.5 -> "0.50"``."""
    if value is None or not math.isfinite(value):
        return "n/a"
    gap = 1.0 - min(abs(float(value)), 1.0)
    decimals = max_decimals if gap <= 0 else min(max_decimals, max(2, math.ceil(-math.log10(gap)) + 1))
    return f"{float(value):.{decimals}f}"
