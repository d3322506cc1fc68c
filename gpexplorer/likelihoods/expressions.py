"""Safe user expressions in ``f`` (and, where a caller allows it, ``y``), compiled to vectorised
numpy functions.

A dashboard user may type a forward model such as ``2*sign(f) + f**3``, or a log likelihood
such as ``y*f - exp(f) - gammaln(y + 1)`` (``parse_expression(text, variables=("f", "y"))``). The text is parsed with
:mod:`ast` and the tree is walked once to build a closure per node; evaluation then only calls
whitelisted numpy functions. Nothing is ever passed to eval/exec/compile.

Grammar (anything else is rejected with a ValueError naming the offending piece):

* the variable ``f`` (and the caller's other ``variables``), the constants ``pi`` and ``e``,
  int/float literals;
* binary ``+ - * / **``, unary ``-`` and ``+``, parentheses;
* ``^`` is accepted as a synonym of ``**`` (mathematical notation; Python's bitwise XOR has no
  meaning for real numbers). It is rewritten textually before parsing so that it gets the
  precedence and right-associativity of ``**``: ``2*f^3`` is 2 f^3 and ``-f^2`` is -(f^2);
* calls with positional arguments of: sin cos tan exp log log1p sqrt tanh sinh cosh arctan abs
  sign floor ceil sigmoid logistic log_sigmoid ndtr log_ndtr gammaln (one argument) and minimum
  maximum (two arguments).

Limits: at most ``MAX_LENGTH`` characters and ``MAX_DEPTH`` levels of nesting; in ``a ** b`` an
exponent that does not depend on f must satisfy |b| <= ``MAX_EXPONENT`` (so ``9**9**9`` is
refused instead of overflowing); sub-expressions without f are folded once at parse time and
must be finite (``1/0``, ``log(0)`` are refused).

Evaluation never warns: overflow gives inf, invalid operations NaN (numpy error state is
silenced); :func:`check_finite` turns that into an error when the caller needs finite values.
Parsing alone does not say where an expression is usable (``exp(exp(exp(f)))`` parses, and is
inf from f = 1.88 on): :func:`check_on_range` checks the values and the slope on the range of f a
caller will evaluate, before it accepts the expression.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

import numpy as np
from scipy import special

__all__ = ["Expression", "parse_expression", "check_finite", "check_on_range", "FUNCTIONS", "CONSTANTS",
           "NON_DIFFERENTIABLE_FUNCTIONS", "MAX_LENGTH", "MAX_DEPTH", "MAX_EXPONENT", "MAX_MAGNITUDE",
           "RANGE_POINTS", "SLOPE_STEP"]

MAX_LENGTH = 200
MAX_DEPTH = 64
MAX_EXPONENT = 64.0
#: :func:`check_on_range` refuses larger values: squared residuals (y - g)^2 must stay finite
MAX_MAGNITUDE = 1e150
#: points of the grid :func:`check_on_range` evaluates (odd, so a symmetric range holds f = 0)
RANGE_POINTS = 401
#: relative step of the central differences: eps^(1/3) balances truncation and rounding error
SLOPE_STEP = float(np.finfo(float).eps) ** (1.0 / 3.0)

#: name -> (numpy function, number of positional arguments)
FUNCTIONS = {
    "sin": (np.sin, 1), "cos": (np.cos, 1), "tan": (np.tan, 1),
    "exp": (np.exp, 1), "log": (np.log, 1), "sqrt": (np.sqrt, 1),
    "tanh": (np.tanh, 1), "sinh": (np.sinh, 1), "cosh": (np.cosh, 1), "arctan": (np.arctan, 1),
    "abs": (np.abs, 1), "sign": (np.sign, 1), "floor": (np.floor, 1), "ceil": (np.ceil, 1),
    "sigmoid": (special.expit, 1), "logistic": (special.expit, 1),
    # for typed log likelihoods: log1p, log sigmoid(z), Phi(z), log Phi(z), log Gamma(z) (y! = Gamma(y + 1))
    "log1p": (np.log1p, 1), "log_sigmoid": (special.log_expit, 1), "ndtr": (special.ndtr, 1),
    "log_ndtr": (special.log_ndtr, 1), "gammaln": (special.gammaln, 1),
    "minimum": (np.minimum, 2), "maximum": (np.maximum, 2),
}
#: functions with jumps or kinks: an expression using them has no usable Taylor linearisation
NON_DIFFERENTIABLE_FUNCTIONS = frozenset({"abs", "sign", "floor", "ceil", "minimum", "maximum"})
CONSTANTS = {"pi": float(np.pi), "e": float(np.e)}
VARIABLE = "f"

_BINARY = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply, ast.Div: np.divide, ast.Pow: np.power}
_UNARY = {ast.USub: np.negative, ast.UAdd: np.positive}

#: readable names for constructs that are refused outright
_REFUSED = {
    ast.Attribute: "attribute access", ast.Subscript: "subscripts", ast.Lambda: "lambda functions",
    ast.ListComp: "comprehensions", ast.SetComp: "comprehensions", ast.DictComp: "comprehensions",
    ast.GeneratorExp: "generator expressions", ast.List: "lists", ast.Tuple: "tuples", ast.Set: "sets",
    ast.Dict: "dicts", ast.Compare: "comparisons", ast.BoolOp: "boolean operators",
    ast.IfExp: "conditional expressions", ast.NamedExpr: "assignment expressions",
    ast.Starred: "starred arguments", ast.JoinedStr: "f-strings", ast.Slice: "slices",
    ast.Await: "await", ast.Yield: "yield", ast.YieldFrom: "yield",
}


@dataclass(frozen=True)
class Expression:
    """A validated expression; call it on an array of f values (any shape), or give every
    variable to :meth:`evaluate_with`."""

    text: str
    functions: frozenset = field(default_factory=frozenset)
    _evaluate: object = field(default=None, repr=False, compare=False)
    variables: frozenset = frozenset({VARIABLE})  # the variables it uses
    allowed: tuple = (VARIABLE,)  # the variables it was allowed to use

    @property
    def non_differentiable_functions(self):
        """The functions with jumps or kinks that the expression uses (empty if none)."""
        return self.functions & NON_DIFFERENTIABLE_FUNCTIONS

    @property
    def differentiable(self):
        return not self.non_differentiable_functions

    def __call__(self, f):
        """Values at f (same shape as f); inf/NaN where the expression overflows or is undefined."""
        return self.evaluate_with(f=f)

    def evaluate_with(self, **values):
        """Values at the given variables (arrays broadcast together; every allowed variable must
        be given); inf/NaN where the expression overflows or is undefined."""
        missing = [v for v in self.allowed if v not in values]
        if missing:
            raise ValueError(f"expression {self.text!r} needs values for {missing}")
        arrays = {k: np.asarray(v, dtype=float) for k, v in values.items()}
        shape = np.broadcast_shapes(*(a.shape for a in arrays.values()))
        with np.errstate(all="ignore"):
            out = np.asarray(self._evaluate(arrays), dtype=float)
        return np.broadcast_to(out, shape).copy()

    def evaluate(self, f, require_finite=False):
        """Like calling the expression; with ``require_finite`` raise unless every value is finite."""
        values = self(f)
        if require_finite:
            check_finite(values, f, what=f"expression {self.text!r}")
        return values


def check_finite(values, inputs=None, what="expression"):
    """Raise ValueError naming the first input where ``values`` is NaN or inf; return values."""
    values = np.asarray(values, dtype=float)
    bad = ~np.isfinite(values)
    if np.any(bad):
        where = ""
        if inputs is not None:
            inputs = np.broadcast_to(np.asarray(inputs, dtype=float), values.shape)
            where = f" at f = {inputs[bad].flat[0]:.6g}"
        kind = "NaN" if np.isnan(values[bad].flat[0]) else "inf"
        raise ValueError(f"{what} is {kind}{where} ({int(bad.sum())} of {values.size} values are not finite)")
    return values


def check_on_range(expression, lower, upper, where="", points=RANGE_POINTS):
    """Raise ValueError unless ``expression`` and its slope are finite, and the values at most
    :data:`MAX_MAGNITUDE` in size, at ``points`` evenly spaced f in [lower, upper] (and f = 0
    when it lies inside). The slope is the central difference with step SLOPE_STEP max(1, |f|).
    ``where`` says why this range (e.g. "the prior's +-5 sd"); the message names the first bad f.
    """
    f = np.linspace(float(lower), float(upper), int(points))
    if lower < 0.0 < upper:
        f = np.union1d(f, [0.0])
    span = f"f in [{lower:.3g}, {upper:.3g}]" + (f" ({where})" if where else "")
    need = f"it must be finite, with a finite slope, for every {span}"
    values = expression(f)
    _refuse_non_finite(values, f, f"g(f) = {expression.text}", need)
    big = np.abs(values) > MAX_MAGNITUDE
    if np.any(big):
        raise ValueError(f"g(f) = {expression.text} is larger than {MAX_MAGNITUDE:.0e} in magnitude at "
                         f"f = {f[big][0]:.3g} (its square overflows); {need}")
    h = SLOPE_STEP * np.maximum(1.0, np.abs(f))
    with np.errstate(all="ignore"):
        slope = (expression(f + h) - expression(f - h)) / (2.0 * h)
    _refuse_non_finite(slope, f, f"the slope of g(f) = {expression.text}", need)


def _refuse_non_finite(values, inputs, what, need):
    """:func:`check_finite`, its message followed by ``need``."""
    try:
        check_finite(values, inputs, what=what)
    except ValueError as err:
        raise ValueError(f"{err}; {need}") from None


def parse_expression(text, variables=(VARIABLE,)):
    """Parse and validate ``text`` in the names ``variables`` (default: f alone); return an
    :class:`Expression` (ValueError if refused)."""
    if not isinstance(text, str):
        raise ValueError(f"an expression must be a string; got {type(text).__name__}")
    stripped = text.strip()
    if not stripped:
        raise ValueError("the expression is empty; write something in f such as 'sin(f)'")
    if len(stripped) > MAX_LENGTH:
        raise ValueError(f"the expression is too long ({len(stripped):,} characters; the limit is {MAX_LENGTH:,})")
    source = stripped.replace("^", "**")
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as err:
        raise ValueError(f"{stripped!r} is not a valid expression: {err.msg}") from None
    except (RecursionError, MemoryError):
        raise ValueError(f"{stripped!r} is nested too deeply") from None
    compiler = _Compiler(tuple(variables))
    evaluate, constant = compiler.compile(tree.body, 0)
    if constant is not None:
        value = constant
        evaluate = lambda env: value  # noqa: E731 - a constant model is legal, if dull
    return Expression(text=stripped, functions=frozenset(compiler.functions), _evaluate=evaluate,
                      variables=frozenset(compiler.used), allowed=tuple(variables))


def _snippet(node):
    try:
        return ast.unparse(node)
    except Exception:  # pragma: no cover - unparse handles every node ast.parse produces
        return type(node).__name__


class _Compiler:
    """Walks the AST once; each node becomes (evaluate(env) -> array, constant value or None),
    env mapping each variable's name to its array."""

    def __init__(self, variables=(VARIABLE,)):
        self.functions = set()
        self.variables = variables
        self.used = set()

    def compile(self, node, depth):
        if depth > MAX_DEPTH:
            raise ValueError(f"the expression is nested too deeply (more than {MAX_DEPTH} levels)")
        handler = self._HANDLERS.get(type(node))
        if handler is None:
            kind = _REFUSED.get(type(node), f"'{type(node).__name__}' syntax")
            raise ValueError(f"{_snippet(node)!r} is not allowed ({kind} cannot be used in an expression); "
                             "use f, numbers, + - * / ** and the listed functions")
        return handler(self, node, depth)

    def _constant(self, node, depth):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            kind = "string literal" if isinstance(value, (str, bytes)) else f"literal of type {type(value).__name__}"
            raise ValueError(f"{kind} {_snippet(node)!r} is not allowed; only real numbers are")
        try:
            number = float(value)
        except OverflowError:
            raise ValueError(f"number literal {_snippet(node)[:20]}... is too large") from None
        if not np.isfinite(number):
            raise ValueError(f"number literal {_snippet(node)!r} is not finite")
        return None, number

    def _name(self, node, depth):
        if node.id in self.variables:
            name = node.id
            self.used.add(name)
            return (lambda env: env[name]), None
        if node.id in CONSTANTS:
            return None, CONSTANTS[node.id]
        if node.id in FUNCTIONS:
            raise ValueError(f"function {node.id!r} must be called, e.g. {node.id}(f)")
        names = (f"the only variable is {self.variables[0]}" if len(self.variables) == 1 else
                 f"the variables are {', '.join(self.variables[:-1])} and {self.variables[-1]}")
        raise ValueError(f"unknown name {node.id!r}: {names} and the constants are pi and e")

    def _unary(self, node, depth):
        op = _UNARY.get(type(node.op))
        if op is None:
            raise ValueError(f"operator in {_snippet(node)!r} is not allowed; only unary - and + are")
        return self._combine(op, [self.compile(node.operand, depth + 1)], node)

    def _binary(self, node, depth):
        op = _BINARY.get(type(node.op))
        if op is None:
            raise ValueError(f"operator {type(node.op).__name__} in {_snippet(node)!r} is not allowed; "
                             "use + - * / ** (or ^ for powers)")
        left = self.compile(node.left, depth + 1)
        right = self.compile(node.right, depth + 1)
        exponent = right[1]
        if isinstance(node.op, ast.Pow) and exponent is not None and abs(exponent) > MAX_EXPONENT:
            raise ValueError(f"exponent {exponent:.6g} in {_snippet(node)!r} is too large (limit {MAX_EXPONENT:g})")
        return self._combine(op, [left, right], node)

    def _call(self, node, depth):
        if not isinstance(node.func, ast.Name):
            raise ValueError(f"only plain function names may be called; {_snippet(node.func)!r} is not allowed")
        name = node.func.id
        if name not in FUNCTIONS:
            raise ValueError(f"function {name!r} is not allowed; allowed: {', '.join(sorted(FUNCTIONS))}")
        if node.keywords:
            keys = ", ".join(f"{k.arg}=" if k.arg else "**" for k in node.keywords)
            raise ValueError(f"keyword arguments ({keys}) are not allowed in {_snippet(node)!r}")
        if any(isinstance(arg, ast.Starred) for arg in node.args):
            raise ValueError(f"starred arguments are not allowed in {_snippet(node)!r}")
        function, arity = FUNCTIONS[name]
        if len(node.args) != arity:
            raise ValueError(f"{name} takes {arity} argument{'s' if arity > 1 else ''}; "
                             f"got {len(node.args)} in {_snippet(node)!r}")
        self.functions.add(name)
        return self._combine(function, [self.compile(arg, depth + 1) for arg in node.args], node)

    def _combine(self, op, compiled, node):
        """Fold constant operands now; otherwise a closure applying op to the children."""
        if all(const is not None for _, const in compiled):
            with np.errstate(all="ignore"):
                value = float(op(*(const for _, const in compiled)))
            if not np.isfinite(value):
                raise ValueError(f"{_snippet(node)!r} does not evaluate to a finite number")
            return None, value
        if len(compiled) == 1:
            (fn, _), = compiled
            return (lambda env: op(fn(env))), None
        (fa, ca), (fb, cb) = compiled
        if ca is not None:
            return (lambda env: op(ca, fb(env))), None
        if cb is not None:
            return (lambda env: op(fa(env), cb)), None
        return (lambda env: op(fa(env), fb(env))), None

    _HANDLERS = {ast.Constant: _constant, ast.Name: _name, ast.UnaryOp: _unary, ast.BinOp: _binary,
                 ast.Call: _call}
