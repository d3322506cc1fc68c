"""Equations in the labs' explanations (gpexplorer/ui/math_text.py): ``$tex$`` becomes MathML,
which the browser draws itself (no script, stylesheet or font is fetched); no explanation shows
TeX-like carets in plain text."""

from __future__ import annotations

import importlib
import re
import xml.etree.ElementTree as ET

import pytest

from gpexplorer.ui.lessons import LAB_PACKAGES
from gpexplorer.ui.math_text import with_math

MATHML = "{http://www.w3.org/1998/Math/MathML}"


def test_a_dollar_segment_becomes_mathml_and_the_rest_stays():
    out = with_math(r"noise $\sigma^2$ and a price of \$5")
    assert out.startswith("noise <math") and out.endswith("and a price of $5")
    tree = ET.fromstring(out[len("noise "):out.index("</math>") + len("</math>")])
    sup = tree.find(f".//{MATHML}msup")
    assert sup is not None and [c.tag for c in sup] == [f"{MATHML}mi", f"{MATHML}mn"]
    assert with_math("no equations here") == "no equations here"
    assert "<code>" in with_math(r"$\frac{1}$") or "<math" in with_math(r"$\frac{1}$")  # refused: shown as written


@pytest.mark.parametrize("route", sorted(LAB_PACKAGES))
def test_no_explanation_writes_an_equation_as_plain_text(route):
    """Every lab's explanations: no caret (x^2) or TeX dollar left outside the MathML."""
    texts = importlib.import_module(LAB_PACKAGES[route] + ".texts")
    notes = dict(getattr(texts, "EXPLAIN", {}))
    if hasattr(texts, "INTRO"):
        notes["intro"] = texts.INTRO
    assert notes, f"{route} has no explanations"
    for key, html in notes.items():
        plain = re.sub(r"<math.*?</math>", "", html, flags=re.S)
        assert "^" not in plain and "$" not in plain, f"{route} {key}: {plain[:200]}"


def test_lesson_texts_write_equations_as_tex_and_every_one_converts():
    """A step's text, question and answer: carets only inside $...$, and the converter accepts each."""
    from gpexplorer.ui.lessons import load_lessons
    from gpexplorer.ui.math_text import MATH, escaped_with_math

    count = 0
    for lesson in load_lessons().values():
        for k, step in enumerate(lesson.steps, 1):
            for text in (step.text, step.exercise.question, step.exercise.answer):
                assert "^" not in MATH.sub("", text), f"{lesson.id} step {k}: {text[:120]}"
                for m in MATH.finditer(text):
                    count += 1
                    html = escaped_with_math(m.group(0))
                    assert html.startswith("<math") and "<code>" not in html, f"{lesson.id} step {k}: {m.group(0)}"
    assert count >= 10
