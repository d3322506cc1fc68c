"""Claims about numbers as data: a lesson step's ``checks``, evaluated against what a lab computes.

A check is a small JSON object a teacher writes beside the step's text::

    {"quantity": "fitc.objective", "op": ">", "than": "fitc.exact_at_params", "plus": 5,
     "why": "FITC's evidence is above the exact log p(y) at its own parameters"}

``quantity`` and ``than`` each name a quantity of the lab (``ui/<lab>/quantities.py`` lists
them: ``fitc.objective``, ``badge.noise-collapse.fitc``, ``before:eks.free_energy`` for the
value before the step's action, ...), or give a number, true or false; either may also be one
binary operation of two such terms, written with spaces around the operator
(``"vfe.band_f_width / exact.band_f_width"``, ``"fitc.objective - exact.objective"``). The
check holds when ``quantity op (than * times + plus)``; ``==`` takes an absolute ``tol``.

Nothing here is evaluated as code: names are looked up in a dict, operators come from a fixed
table. :func:`evaluate` never raises for a missing or non-numeric quantity; it says so in the
outcome, which the lesson test then reports with the file and step.
"""

from __future__ import annotations

import difflib
import math
import operator
from dataclasses import dataclass

__all__ = ["Check", "Outcome", "CheckError", "OPS", "parse_check", "evaluate", "describe", "format_value"]

#: comparison operators a check may use
OPS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le, "==": None, "!=": None}
#: arithmetic between two terms of a side (" a / b ")
ARITHMETIC = {" + ": operator.add, " - ": operator.sub, " * ": operator.mul, " / ": operator.truediv}
KEYS = {"quantity", "op", "than", "times", "plus", "tol", "why"}


class CheckError(ValueError):
    """A check that is not well formed (a key missing or misspelt, an unknown operator)."""


@dataclass(frozen=True)
class Check:
    quantity: str
    op: str
    than: object
    times: float = 1.0
    plus: float = 0.0
    tol: float = 0.0
    why: str = ""

    def text(self) -> str:
        """The check as one line: ``fitc.objective > fitc.exact_at_params + 5``."""
        right = _side_text(self.than)
        if self.times != 1.0:
            right = f"{self.times:g} x ({right})"
        if self.plus:
            right = f"{right} {'+' if self.plus > 0 else '-'} {abs(self.plus):g}"
        tol = f" (within {self.tol:g})" if self.op == "==" and self.tol else ""
        return f"{self.quantity} {self.op} {right}{tol}"


@dataclass(frozen=True)
class Outcome:
    """A check against one set of values: whether it holds, both sides' values and a sentence."""

    check: Check
    holds: bool
    left: object
    right: object
    message: str


def parse_check(raw, where="check") -> Check:
    """A :class:`Check` from its JSON object; CheckError naming ``where`` and what is wrong."""
    if not isinstance(raw, dict):
        raise CheckError(f"{where}: a check is an object with 'quantity', 'op' and 'than'")
    unknown = set(raw) - KEYS
    if unknown:
        raise CheckError(f"{where}: unknown key(s) {sorted(unknown)}; a check has {sorted(KEYS)}")
    for key in ("quantity", "op", "than"):
        if key not in raw:
            raise CheckError(f"{where}: the check has no {key!r}")
    if not isinstance(raw["quantity"], str) or not raw["quantity"].strip():
        raise CheckError(f"{where}: 'quantity' must name a quantity of the lab")
    if raw["op"] not in OPS:
        raise CheckError(f"{where}: unknown op {raw['op']!r}; one of {', '.join(OPS)}")
    if not isinstance(raw["than"], (str, int, float, bool)):
        raise CheckError(f"{where}: 'than' must be a quantity's name, a number, true or false")
    numbers = {}
    for key in ("times", "plus", "tol"):
        value = raw.get(key, Check.__dataclass_fields__[key].default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise CheckError(f"{where}: {key!r} must be a finite number")
        numbers[key] = float(value)
    if not isinstance(raw.get("why", ""), str):
        raise CheckError(f"{where}: 'why' must be text")
    return Check(raw["quantity"].strip(), raw["op"], raw["than"], why=raw.get("why", ""), **numbers)


def _side_text(side):
    if isinstance(side, bool):
        return "true" if side else "false"
    return side if isinstance(side, str) else f"{side:g}"


class _Missing(Exception):
    pass


def _term(token: str, values: dict):
    token = token.strip()
    if token in values:
        return values[token]
    if token.lower() in ("true", "false"):
        return token.lower() == "true"
    try:
        return float(token)
    except ValueError:
        pass
    close = difflib.get_close_matches(token, list(values), n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise _Missing(f"unknown quantity {token!r}{hint}")


def _side(side, values: dict):
    """The value of one side: a constant, a quantity, or ``a <op> b`` of two terms."""
    if not isinstance(side, str):
        return side
    for symbol, fn in ARITHMETIC.items():
        if symbol in side:
            a, b = side.split(symbol, 1)
            left, right = _number(_term(a, values), a), _number(_term(b, values), b)
            if fn is operator.truediv and right == 0:
                return math.nan
            return fn(left, right)
    return _term(side, values)


def _number(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Missing(f"{name.strip()} is {value!r}, not a number")
    return float(value)


def evaluate(check: Check, values: dict) -> Outcome:
    """Whether ``check`` holds for ``values`` (quantity name -> number, bool or text)."""
    try:
        left = _side(check.quantity, values)
        right = _side(check.than, values)
        if check.times != 1.0 or check.plus:
            right = _number(right, _side_text(check.than)) * check.times + check.plus
    except _Missing as err:
        return Outcome(check, False, None, None, str(err))
    if check.op in ("==", "!="):
        if isinstance(left, (int, float)) and isinstance(right, (int, float)) \
                and not isinstance(left, bool) and not isinstance(right, bool):
            equal = abs(float(left) - float(right)) <= check.tol
        else:
            equal = left == right
        holds = equal if check.op == "==" else not equal
    else:
        try:
            a, b = _number(left, check.quantity), _number(right, _side_text(check.than))
        except _Missing as err:
            return Outcome(check, False, left, right, str(err))
        holds = bool(OPS[check.op](a, b)) and math.isfinite(a) and math.isfinite(b)
    return Outcome(check, holds, left, right, describe(check, left, right, holds))


def format_value(value) -> str:
    """A number as the lesson card and the test report print it (by magnitude), other values as text."""
    if isinstance(value, bool) or value is None:
        return str(value).lower()
    if isinstance(value, (int, float)):
        v = float(value)
        if not math.isfinite(v) or v == int(v) and abs(v) < 1e6:
            return str(v) if not math.isfinite(v) else f"{int(v)}"
        if abs(v) < 1e-3 or abs(v) >= 1e5:
            return f"{v:.3g}"
        if abs(v) < 1:
            return f"{v:.5g}"
        return f"{v:.2f}"
    return str(value)


def describe(check: Check, left, right, holds) -> str:
    """One sentence: the check with its values, and whether it holds."""
    verdict = "holds" if holds else "does NOT hold"
    return f"{check.text()}: {format_value(left)} {check.op} {format_value(right)} {verdict}"
