"""Claims as data (gpexplorer/ui/claims.py): parsing, every operator, arithmetic sides, missing names."""

import math
import re

import pytest

from gpexplorer.ui.claims import CheckError, evaluate, format_value, parse_check

VALUES = {"fitc.objective": -51.8, "fitc.exact_at_params": -62.3, "vfe.objective": -55.9, "badge.x.fitc": True,
          "ugp.status": "diverged", "before:eks.nlpd_f": 0.5, "eks.nlpd_f": 0.7, "zero": 0.0, "nan": math.nan}


@pytest.mark.parametrize("raw, holds", [
    ({"quantity": "fitc.objective", "op": ">", "than": "fitc.exact_at_params"}, True),
    ({"quantity": "fitc.objective", "op": ">", "than": "fitc.exact_at_params", "plus": 10.6}, False),
    ({"quantity": "fitc.objective", "op": ">=", "than": -51.8}, True),
    ({"quantity": "vfe.objective", "op": "<", "than": "fitc.objective"}, True),
    ({"quantity": "vfe.objective", "op": "<=", "than": "fitc.objective", "times": 1.2}, False),  # -62.16
    ({"quantity": "badge.x.fitc", "op": "==", "than": True}, True),
    ({"quantity": "badge.x.fitc", "op": "!=", "than": True}, False),
    ({"quantity": "ugp.status", "op": "==", "than": "diverged"}, False),  # a name, not text: unknown quantity
    ({"quantity": "eks.nlpd_f - before:eks.nlpd_f", "op": ">", "than": 0.15}, True),
    ({"quantity": "eks.nlpd_f / before:eks.nlpd_f", "op": "==", "than": 1.4, "tol": 1e-12}, True),
    ({"quantity": "fitc.objective * 2", "op": "<", "than": -100}, True),
    ({"quantity": "fitc.objective + 100", "op": ">", "than": 48}, True),
    ({"quantity": "eks.nlpd_f / zero", "op": ">", "than": 0}, False),  # NaN never holds
    ({"quantity": "nan", "op": "<", "than": 1}, False),
])
def test_each_operator_and_side(raw, holds):
    assert evaluate(parse_check(raw), VALUES).holds is holds


def test_an_unknown_quantity_fails_with_a_suggestion_instead_of_raising():
    outcome = evaluate(parse_check({"quantity": "fitc.objectiv", "op": ">", "than": 0}), VALUES)
    assert not outcome.holds and "unknown quantity 'fitc.objectiv'" in outcome.message
    assert "did you mean fitc.objective" in outcome.message


def test_a_boolean_compared_as_a_number_fails_with_a_message():
    outcome = evaluate(parse_check({"quantity": "badge.x.fitc", "op": ">", "than": 0}), VALUES)
    assert not outcome.holds and "not a number" in outcome.message


def test_the_message_names_the_check_both_values_and_the_verdict():
    outcome = evaluate(parse_check({"quantity": "fitc.objective", "op": ">", "than": "fitc.exact_at_params",
                                    "plus": 5}), VALUES)
    assert outcome.message == "fitc.objective > fitc.exact_at_params + 5: -51.80 > -57.30 holds"


@pytest.mark.parametrize("raw, message", [
    ("x > 1", "a check is an object"),
    ({"quantity": "a", "op": ">"}, "no 'than'"),
    ({"quantity": "a", "op": "=>", "than": 1}, "unknown op '=>'"),
    ({"quantity": "a", "op": ">", "than": 1, "tolerance": 1}, "unknown key(s) ['tolerance']"),
    ({"quantity": "", "op": ">", "than": 1}, "'quantity' must name"),
    ({"quantity": "a", "op": ">", "than": [1]}, "'than' must be"),
    ({"quantity": "a", "op": ">", "than": 1, "times": "2"}, "'times' must be a finite number"),
    ({"quantity": "a", "op": ">", "than": 1, "plus": float("inf")}, "'plus' must be a finite number"),
])
def test_a_malformed_check_is_named(raw, message):
    with pytest.raises(CheckError, match=re.escape(message)):
        parse_check(raw, "lesson.json, step 2, check 1")


@pytest.mark.parametrize("value, text", [(8.67e-05, "8.67e-05"), (5.3e133, "5.3e+133"), (-51.826, "-51.83"),
                                         (0.7, "0.7"), (0.999976, "0.99998"), (3, "3"), (True, "true"), ("diverged", "diverged")])
def test_values_are_printed_by_magnitude(value, text):
    assert format_value(value) == text
