"""The front page at ``/``: what gpexplorer is, one card per lab, and the lessons.

``gpexplorer serve`` writes it (:func:`write_index`) and passes it to ``panel serve --index``;
its images are served from the package's ``ui/front/`` folder under :data:`STATIC_ROUTE`. It is
plain HTML with inline CSS: no script, font or image from another host. (Panel renders the
index with Tornado's template engine, so the text holds no ``{{`` or ``{%``.)
"""

from __future__ import annotations

import html
import pathlib

from gpexplorer.ui.lessons import LABS, load_lessons

FRONT_DIR = pathlib.Path(__file__).resolve().parent / "front"
STATIC_ROUTE = "gpx-front"
#: lab route -> (thumbnail file in FRONT_DIR, what you will see)
LAB_CARDS = {
    "primer": ("primer.png",
               "The first lecture: prior samples, conditioning on points you click, two views of one Gaussian, "
               "the evidence as sequential prediction and Occam's razor."),
    "sparse_regression": ("sparse_regression.png",
                          "The exact GP beside SoR, DTC, FITC and VFE: drag inducing inputs, watch every bound move."),
    "linearized": ("linearized.png",
                   "EGP, UGP, EKS and UKS on y = g(f) + noise: linearisations, free energies and their close-up."),
    "black_box": ("black_box.png",
                  "SAVIGP's FG, MoG1 and MoG2 on a black-box likelihood: live ELBO, estimator variance, mixture components."),
    "convolutional": ("convolutional.png",
                      "Convolutional GPs on images: edit an inducing patch, see each patch's contribution, race four "
                      "kernels, draw a digit."),
    "random_features": ("random_features.png",
                        "Random Fourier features: the kernel they estimate as D grows; an SLM and a GLM on them beside "
                        "the exact GP; ARD."),
}

_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,Arial,sans-serif;margin:0;background:#f6f7f9;color:#1d2430}
header{background:#1f3b57;color:white;padding:14px 32px}
header h1{margin:0;font-size:1.7em}
header p{margin:6px 0 0;max-width:60em;line-height:1.4}
main{padding:12px 32px;max-width:1600px}
.cards{display:flex;flex-wrap:wrap;gap:16px}
.card{background:white;border:1px solid #d5dbe3;border-radius:10px;width:236px;overflow:hidden;
 text-decoration:none;color:inherit;box-shadow:0 1px 3px rgba(0,0,0,.08)}
.card:hover{box-shadow:0 3px 10px rgba(0,0,0,.18)}
.card img{width:100%;height:112px;object-fit:cover;object-position:top left;display:block;border-bottom:1px solid #e3e7ec}
.card h2{margin:8px 14px 2px;font-size:1.15em}
.card p{margin:0 14px 10px;line-height:1.3}
h2.section{margin:20px 0 4px}
ol.lessons{padding-left:1.2em;columns:2 640px;column-gap:40px;margin:4px 0}
ol.lessons li{margin:0 0 8px;line-height:1.3;break-inside:avoid}
ol.lessons .lab{color:#5a6677;font-size:.9em}
"""


def index_html(lessons=None) -> str:
    """The whole front page as one HTML document."""
    lessons = load_lessons() if lessons is None else lessons
    cards = []
    for route, (image, blurb) in LAB_CARDS.items():
        cards.append(f'<a class="card" id="card-{route}" href="./{route}">'
                     f'<img src="./{STATIC_ROUTE}/{image}" alt="Screenshot of the {html.escape(LABS[route])}">'
                     f"<h2>{html.escape(LABS[route])}</h2><p>{html.escape(blurb)}</p></a>")
    items = []
    for lesson in lessons.values():
        claims = sum(len(step.checks) for step in lesson.steps)
        items.append(f'<li><a class="lesson" id="lesson-{lesson.id}" href=".{html.escape(lesson.url(1))}">'
                     f"{html.escape(lesson.title)}</a> <span class=\"lab\">({html.escape(LABS[lesson.lab])}, "
                     f"{len(lesson.steps)} steps, {claims} claims checked against the numbers)</span><br>"
                     f"{html.escape(lesson.summary)}</li>")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>gpexplorer</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<style>{_CSS}</style></head>
<body><header><h1>gpexplorer</h1>
<p>Approximate Gaussian-process inference you can see, touch and trust. Pick a lab to compare sparse
approximations, linearised inference, black-box variational inference, convolutional GPs or random features live, or follow a lesson: each step sets up a lab and says
what to look at.</p></header>
<main><div class="cards">{''.join(cards)}</div>
<h2 class="section">Lessons ({len(lessons)})</h2>
<ol class="lessons">{''.join(items)}</ol></main></body></html>
"""


def write_index(folder) -> pathlib.Path:
    """Write the front page into ``folder`` as ``index.html``; returns its path."""
    path = pathlib.Path(folder) / "index.html"
    text = index_html()
    if "{{" in text or "{%" in text or "{#" in text:  # Tornado would treat them as template code
        raise ValueError("the front page text must not contain '{{', '{%' or '{#'")
    path.write_text(text, encoding="utf-8")
    return path
