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


#: a caret, or a Greek letter spelt out, in a plot's title, axis label, legend or a control's label;
#: "sigma points" is the unscented transform's name, not a letter
SPELT_OUT = re.compile(r"\^|\b(?:sigma(?![- ]points?\b)|alpha|beta|kappa|lambda|omega|Phi|phi|mu|tau)\b")


def _labels(model):
    from bokeh.models import Axis, LegendItem, Title

    if isinstance(model, Title):
        yield model.text
    elif isinstance(model, Axis):
        yield model.axis_label if isinstance(model.axis_label, str) else ""
    elif isinstance(model, LegendItem):
        label = model.label
        yield label.get("value", "") if isinstance(label, dict) else getattr(label, "value", str(label or ""))
    for name in ("title", "label"):
        value = getattr(model, name, None) if name in model.properties() else None
        if isinstance(value, str) and not isinstance(model, Title):
            yield value
    if "options" in model.properties() and isinstance(model.options, list):
        yield from (o if isinstance(o, str) else str(o[-1]) for o in model.options)


@pytest.mark.parametrize("route", sorted(LAB_PACKAGES))
def test_plot_titles_axes_legends_and_controls_write_letters_not_spelt_out_names(route):
    """Every title, axis label, legend entry and control label of a lab's page at its defaults
    writes sigma^2 as σ² (Unicode), not as ASCII."""
    import panel as pn
    from bokeh.document import Document

    from gpexplorer.ui.page import LAB_ROUTES

    module = importlib.import_module(LAB_PACKAGES[route] + ".lab")
    lab_class = next(getattr(module, name) for name, r in LAB_ROUTES.items() if r == route)
    lab = lab_class()
    doc = Document()
    root = pn.Column(lab.controls(), lab.views()).get_root(doc)
    found = [(type(m).__name__, text) for m in root.references() for text in _labels(m) if text and SPELT_OUT.search(text)]
    assert not found, f"{route}: {found}"


def test_lesson_prose_writes_no_caret_or_spelt_out_letter_outside_tex():
    """Every string of every lesson a reader sees (titles, texts, exercises, claims' reasons,
    summaries): no x^2, sqrt(...) or spelt-out Greek letter outside $...$ (settings are left out)."""
    import json

    from gpexplorer.ui.lessons import LESSONS_DIR

    pattern = re.compile(r"\^|sqrt\(|\b(?:sigma(?![- ]points?\b)|alpha|beta|kappa|lambda|omega|Phi|phi|mu|tau)\b")
    found = []

    def walk(value, where):
        if isinstance(value, dict):
            for key, item in value.items():
                if key not in ("set", "settings", "state", "action", "quantity", "name", "key"):
                    walk(item, f"{where}.{key}")
        elif isinstance(value, list):
            for k, item in enumerate(value):
                walk(item, f"{where}[{k}]")
        elif isinstance(value, str) and pattern.search(re.sub(r"\$[^$]*\$", "", value)):
            found.append(f"{where}: {value[:120]}")

    for path in sorted(LESSONS_DIR.glob("*.json")):
        walk(json.loads(path.read_text()), path.name)
    assert not found, "\n".join(found)
