"""The whitelist expression evaluator: what it refuses, what it computes, and that it never warns."""

import ast
import pathlib
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from gpexplorer.likelihoods import expressions
from gpexplorer.likelihoods.expressions import MAX_LENGTH, check_finite, parse_expression

F = np.linspace(-3.0, 3.0, 25)

REFUSED = {  # text -> a piece of the message that names the offending part
    "__import__('os')": "'__import__' is not allowed",
    "f.__class__": r"'f.__class__' is not allowed \(attribute access",
    "np.exp(f)": "'np.exp' is not allowed",
    "open('x')": "'open' is not allowed",
    "[f for f in ()]": "comprehensions",
    "lambda: 1": "lambda functions",
    "exp(f, out=f)": r"keyword arguments \(out=\)",
    "os": "unknown name 'os'",
    "f[0]": "subscripts",
    "'a'": "string literal",
    "9**9**9": "exponent 3.8742e\\+08 .* too large",
    "f.real": "attribute access",
    "(f).__class__.__bases__": "attribute access",
    "exp(*f)": "starred",
    "exp(**{})": r"keyword arguments \(\*\*\)",
    "getattr(f, 'x')": "'getattr' is not allowed",
    "f if f else 1": "conditional",
    "f < 1": "comparisons",
    "f and 1": "boolean operators",
    "f % 2": "operator Mod",
    "f // 2": "operator FloorDiv",
    "f @ f": "operator MatMult",
    "~f": "unary - and \\+",
    "not f": "unary - and \\+",
    "(f, f)": "tuples",
    "{f: 1}": "dicts",
    "True": "bool",
    "1j": "complex",
    "b'x'": "string literal",
    "exp": "must be called",
    "exp(f, f)": "exp takes 1 argument",
    "minimum(f)": "minimum takes 2 arguments",
    "x": "unknown name 'x'",
    "F": "unknown name 'F'",
    "f; 1": "not a valid expression",
    "import os": "not a valid expression",
    "": "empty",
    "   ": "empty",
    "1/0": "does not evaluate to a finite number",
    "log(0) + f": "does not evaluate to a finite number",
    "f ** (2 ** 7)": "exponent 128 .* too large",
    "-" * 70 + "f": "nested too deeply",
    "-(" * 66 + "f" + ")" * 66: "nested too deeply",
    "sin(" * 50 + "f" + ")" * 50: "too long",
    "f + " * 60 + "f": "too long",
}

ACCEPTED = {  # text -> the same function written directly in numpy
    "2*sign(f) + f**3": lambda f: 2 * np.sign(f) + f ** 3,
    "sin(f)": np.sin,
    "exp(-f**2/2)": lambda f: np.exp(-f ** 2 / 2),
    "1/(1+exp(-f))": lambda f: 1 / (1 + np.exp(-f)),
    "f^3 + f^2 + f": lambda f: f ** 3 + f ** 2 + f,
    "2*f^3": lambda f: 2 * f ** 3,
    "-f^2": lambda f: -(f ** 2),
    "2^3^f": lambda f: 2.0 ** (3.0 ** f),
    "tanh(2*f)": lambda f: np.tanh(2 * f),
    "sigmoid(f) - logistic(-f)": lambda f: 2 / (1 + np.exp(-f)) - 1,
    "maximum(f, 0) + minimum(f, -1)": lambda f: np.maximum(f, 0) + np.minimum(f, -1),
    "abs(f) * pi / e": lambda f: np.abs(f) * np.pi / np.e,
    "sqrt(cosh(f)) - sinh(f)/3 + arctan(f) + cos(f)*tan(f/4)":
        lambda f: np.sqrt(np.cosh(f)) - np.sinh(f) / 3 + np.arctan(f) + np.cos(f) * np.tan(f / 4),
    "log(1 + exp(f)) + floor(f) - ceil(f/2)": lambda f: np.log1p(np.exp(f)) + np.floor(f) - np.ceil(f / 2),
    "+f - -f": lambda f: 2 * f,
    "3": lambda f: np.full_like(f, 3.0),
    "2 ** 10 * f": lambda f: 1024 * f,
    "f ** -0.5": lambda f: np.where(f >= 0, np.abs(f) ** -0.5, np.nan),
}


@pytest.mark.parametrize("text", sorted(REFUSED), ids=lambda t: t[:25] or "empty")
def test_refused_with_a_message_naming_the_offending_piece(text):
    with pytest.raises(ValueError, match=REFUSED[text]):
        parse_expression(text)


@pytest.mark.parametrize("text", sorted(ACCEPTED))
def test_accepted_expressions_evaluate_like_numpy(text):
    expr = parse_expression(text)
    with np.errstate(all="ignore"):
        expected = ACCEPTED[text](F)
    out = expr(F)
    assert out.shape == F.shape
    np.testing.assert_allclose(out, expected, rtol=1e-14, atol=1e-14, equal_nan=True)


def test_functions_used_and_differentiability_are_recorded():
    expr = parse_expression("2*sign(f) + exp(f)")
    assert expr.functions == {"sign", "exp"}
    assert expr.non_differentiable_functions == {"sign"} and not expr.differentiable
    assert parse_expression("sin(f)**2").differentiable


def test_non_string_and_length_limit():
    with pytest.raises(ValueError, match="must be a string"):
        parse_expression(3)
    at_limit = "1." + "0" * (MAX_LENGTH - 4) + "*f"
    assert len(at_limit) == MAX_LENGTH
    np.testing.assert_array_equal(parse_expression(at_limit)(F), F)
    with pytest.raises(ValueError, match="too long"):
        parse_expression(at_limit + "1")
    nested = "sin(" * 39 + "f" + ")" * 39  # 39 levels: deep but legal
    expected = F
    for _ in range(39):
        expected = np.sin(expected)
    np.testing.assert_allclose(parse_expression(nested)(F), expected, rtol=1e-14)


def test_evaluation_never_warns_and_reports_non_finite_values():
    expr = parse_expression("exp(1000*f) + log(f) + 1/f")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = expr(np.array([-1.0, 0.0, 1.0, 1e-3]))
    assert np.isnan(out[0]) and np.isnan(out[1]) and np.isposinf(out[2])
    np.testing.assert_allclose(out[3], np.e + np.log(1e-3) + 1e3, rtol=1e-14)
    with pytest.raises(ValueError, match=r"is NaN at f = -1 \(3 of 4 values"):
        expr.evaluate(np.array([-1.0, 0.0, 1.0, 1e-3]), require_finite=True)
    ok = parse_expression("sin(f)").evaluate(F, require_finite=True)
    np.testing.assert_array_equal(ok, np.sin(F))
    with pytest.raises(ValueError, match="is inf at f = 2"):
        check_finite(np.array([1.0, np.inf]), np.array([1.0, 2.0]), what="g")
    np.testing.assert_array_equal(check_finite([1.0, 2.0]), [1.0, 2.0])


def test_constant_subexpressions_are_folded_once():
    expr = parse_expression("f * (2 + 3) ** 2")
    np.testing.assert_allclose(expr(F), 25 * F)
    assert parse_expression("sin(pi/2) + 0*f")(np.zeros(3)).tolist() == [1.0, 1.0, 1.0]


@settings(max_examples=80, deadline=None)
@given(a=st.floats(-5, 5), b=st.floats(-5, 5), n=st.integers(0, 6),
       f=hnp.arrays(float, st.integers(1, 10), elements=st.floats(-4, 4)))
def test_random_polynomials_match_numpy(a, b, n, f):
    text = f"({a!r})*f**{n} + ({b!r})*sin(f) - f/7"
    expected = a * f ** n + b * np.sin(f) - f / 7
    np.testing.assert_allclose(parse_expression(text)(f), expected, rtol=1e-12, atol=1e-12)


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet="f()+-*/^.,0123456789 _abcdeilmnopstx[]'=:", max_size=40))
def test_arbitrary_text_either_parses_or_raises_value_error(text):
    try:
        expr = parse_expression(text)
    except ValueError:
        return
    out = expr(F)  # whatever parsed must evaluate on arrays without error or warnings
    assert out.shape == F.shape and out.dtype == float


def test_module_never_calls_eval_exec_or_compile():
    tree = ast.parse(pathlib.Path(expressions.__file__).read_text())
    called = {node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    assert not called & {"eval", "exec", "compile", "__import__", "getattr"}


# --- issue 14, bug 7: a typed g is checked where the methods will evaluate it ----------------------

def test_range_check_rejects_an_expression_that_overflows_inside_the_range():
    expr = parse_expression("exp(exp(exp(f)))")  # parses: finite near f = 0, inf from f = 1.88 on
    with pytest.raises(ValueError, match=r"exp\(exp\(exp\(f\)\)\).* is inf at f = 1\.[89].*\[-4, 4\]"):
        expressions.check_on_range(expr, -4.0, 4.0)
    expressions.check_on_range(expr, -4.0, 1.5)  # below the overflow it is fine


@pytest.mark.parametrize("text, match", [
    ("log(f)", "is NaN at f = -4"),  # undefined for negative f
    ("sqrt(f)", "is NaN at f = -4"),
    ("1/f", "is inf at f = 0"),  # the grid holds f = 0, where every method starts
    ("exp(exp(f))^64", "is inf"),
    ("exp(f^2)^22", r"larger than 1e\+150"),  # finite, but its square overflows in the methods
])
def test_range_check_names_the_first_bad_point(text, match):
    with pytest.raises(ValueError, match=match):
        expressions.check_on_range(parse_expression(text), -4.0, 4.0)


def test_range_check_checks_the_slope_too():
    # finite on the whole range, but its slope at f = -4 needs sqrt of a negative number
    expr = parse_expression("sqrt(f + 4)")
    assert np.all(np.isfinite(expr(np.linspace(-4, 4, 401))))
    with pytest.raises(ValueError, match=r"slope of g\(f\) = sqrt\(f \+ 4\) is NaN at f = -4"):
        expressions.check_on_range(expr, -4.0, 4.0)
    expressions.check_on_range(expr, -3.0, 4.0)


@pytest.mark.parametrize("text", ["sin(f) + 0.1*f^3", "f^64", "exp(exp(f))", "2*sign(f) + f^3", "tanh(2*f)",
                                  "sqrt(abs(f))", "1/(1 + f^2)"])
def test_range_check_accepts_expressions_finite_on_the_range(text):
    expressions.check_on_range(parse_expression(text), -4.0, 4.0)


def test_length_message_gives_the_real_length_and_the_limit():
    with pytest.raises(ValueError, match=r"too long \(40,001 characters; the limit is 200\)"):
        parse_expression("f" * 40_001)
