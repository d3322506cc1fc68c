"""Jupyter offline (issue 14, item 6): the README's notebook snippet renders without internet.

``tests/notebooks/readme_snippet.ipynb`` (the README's code: ``gpexplorer.notebook()``, the
sparse lab, ``gpexplorer.ui.plots``) is executed with nbclient in a kernel running this venv's
Python, and every output of every cell (HTML, JavaScript, the HoloViews/Panel mime bundles) is
searched for resources fetched from another host. The same search finds the CDN links of a
plain ``pn.extension()`` notebook, so it is shown to fail where Panel's defaults would.
"""

import json
import pathlib
import re
from urllib.parse import urlsplit

import nbformat
import pytest
from notebook_kernel import execute

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "tests" / "notebooks" / "readme_snippet.ipynb"
LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "[::1]", "0.0.0.0"}

#: hosts whose mere mention in an output is suspect: CDNs and web fonts
CDN_HOSTS = ("cdn.jsdelivr.net", "cdn.bokeh.org", "cdn.holoviz.org", "unpkg.com", "fonts.googleapis.com",
             "fonts.gstatic.com", "cdnjs.cloudflare.com", "code.jquery.com")
#: CDN addresses written inside the inlined BokehJS/Panel bundles, fetched only on demand by
#: features gpexplorer does not use: BokehJS's MathJax provider (a TeX label) and Panel's
#: TablerIcon view (an icon widget). Allowed in the loader's JavaScript only, never as a resource
#: reference (script src, link href, stylesheet url, loader URL list), which RESOURCE_PATTERNS catch.
LAZY_LIBRARY_URLS = ("https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-svg.js",
                     "https://cdn.jsdelivr.net/npm/@tabler/icons-webfont@latest")
LOADER_MIME_TYPES = ("application/javascript", "application/vnd.holoviews_load.v0+json")

_Q = r"""\\*["']"""  # a quote, possibly escaped inside a JS or JSON string
_URL = r"""(?P<url>(?:https?:)?//[^"'\\\s)>]+)"""
RESOURCE_PATTERNS = [
    re.compile(r"<(?:script|link|img|iframe|source|embed)\b[^>]*?\b(?:src|href)\s*=\s*" + _Q + "?" + _URL, re.I),
    re.compile(r"@import\s+(?:url\()?\s*" + _Q + "?" + _URL, re.I),
    re.compile(r"url\(\s*" + _Q + "?" + _URL, re.I),
    re.compile(_Q + r"url" + _Q + r"\s*:\s*" + _Q + _URL),  # a Bokeh ImportedStyleSheet in a document
]
LOADER_LISTS = re.compile(r"\b(?:js_urls|css_urls|js_modules|js_exports)\s*=\s*(\[[^\]]*\]|\{[^}]*\})")


def _external(url):
    return (urlsplit(url if "://" in url else "http:" + url).hostname or "") not in LOCAL_HOSTS


def external_references(mime, text):
    """Every problem in one output's ``text`` of type ``mime``: resources it would fetch from a
    host other than this machine, and any CDN host named outside the known lazy library URLs."""
    found = [m.group("url") for p in RESOURCE_PATTERNS for m in p.finditer(text) if _external(m.group("url"))]
    for listing in LOADER_LISTS.findall(text):
        found += [u for u in re.findall(_URL, listing) if _external(u)]
    if mime in LOADER_MIME_TYPES:
        for url in LAZY_LIBRARY_URLS:
            text = text.replace(url, "")
    found += [host for host in CDN_HOSTS if host in text]
    return sorted(set(found))


def notebook_problems(nb):
    """{"cell i, mime": [problems]} over every output of every code cell."""
    out = {}
    for i, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            for mime, value in output.get("data", {}).items():
                text = value if isinstance(value, str) else json.dumps(value)
                problems = external_references(mime, "".join(text) if isinstance(text, list) else text)
                if problems:
                    out.setdefault(f"cell {i}, {mime}", []).extend(problems)
    return out


# the detector itself: caught where a resource comes from elsewhere, quiet where it does not ----

@pytest.mark.parametrize("mime, text", [
    ("text/html", '<script src="https://cdn.bokeh.org/bokeh/release/bokeh-3.9.2.min.js"></script>'),
    ("text/html", "<link rel='stylesheet' href='https://example.org/a.css'>"),
    ("text/html", "<style>@import url(https://fonts.googleapis.com/css?family=Roboto);</style>"),
    ("text/html", '{"type":"object","name":"ImportedStyleSheet","attributes":{"url":"https://x.org/theme.css"}}'),
    ("application/javascript", 'const js_urls = ["https://cdn.holoviz.org/panel/1.9.4/dist/panel.min.js"];'),
    ("application/javascript", 'const css_urls = [\\"//unpkg.com/a.css\\"];'),
    ("text/html", "<div>see cdn.jsdelivr.net for more</div>"),
    ("text/html", '<script src="https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-svg.js"></script>'),
])
def test_the_detector_finds_external_resources(mime, text):
    assert external_references(mime, text)


@pytest.mark.parametrize("mime, text", [
    ("text/html", '<script src="http://localhost:8888/static/a.js"></script><a href="https://arxiv.org">paper</a>'),
    ("text/html", '<script type="application/javascript">console.log("inline")</script>'),
    ("application/javascript", 'const js_urls = []; t.src="https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-svg.js"'),
])
def test_the_detector_passes_local_and_inline_resources(mime, text):
    assert not external_references(mime, text)


# the notebooks --------------------------------------------------------------------------------

def test_a_plain_pn_extension_notebook_is_caught(tmp_path):
    """Panel's defaults (CDN resources): the detector must fail this notebook."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in (
        "import holoviews as hv\nimport panel as pn\nhv.extension('bokeh', logo=False)\npn.extension()",
        "pn.Row(pn.widgets.FloatSlider(), hv.Curve([1, 2, 3]))")])
    problems = notebook_problems(execute(nb, tmp_path))
    assert any("cdn.bokeh.org" in p for ps in problems.values() for p in ps), problems
    assert any(key.startswith("cell 1") for key in problems), problems  # the rendered layout's stylesheets


def test_the_readme_notebook_renders_with_no_external_resource(tmp_path):
    nb = execute(nbformat.read(NOTEBOOK, as_version=4), tmp_path)
    assert not notebook_problems(nb), notebook_problems(nb)
    sources = [c.source for c in nb.cells if c.cell_type == "code"]
    outputs = ["".join(json.dumps(o.get("data", {})) for o in c.outputs) for c in nb.cells if c.cell_type == "code"]
    assert "gpexplorer.notebook()" in sources[0] and "BokehJS" in outputs[0]  # the bundle is inline
    assert '\\"name\\":\\"posterior\\"' in outputs[1]  # the lab's posterior figure is in its output
    for source, output in zip(sources[2:], outputs[2:]):
        assert "plots." in source and "text/html" in output  # each plots cell rendered HTML


def test_embed_stylesheets_inlines_what_holoviews_leaves_on_the_cdn():
    """HoloViews' own display path keeps Panel's CDN stylesheet links; the hook that
    gpexplorer.notebook() registers replaces them by the files' text, only while inline is on."""
    import holoviews as hv
    import panel as pn
    from bokeh.models import ImportedStyleSheet, UIElement
    from panel.io.resources import CDN_DIST, set_resource_mode

    from gpexplorer.ui.notebook import embed_stylesheets

    def cdn_links(root):
        return [s for m in root.select({"type": UIElement}) for s in m.stylesheets
                if isinstance(s, ImportedStyleSheet) and s.url.startswith(CDN_DIST)]

    for inline, expect_links in ((False, True), (True, False)):
        with set_resource_mode("cdn"), pn.config.set(inline=inline):
            root = pn.Column(pn.pane.HoloViews(hv.Curve([1, 2]), backend="bokeh")).get_root()
            assert cdn_links(root)
            embed_stylesheets(None, root)
            assert bool(cdn_links(root)) == expect_links


def test_the_readme_shows_the_executed_notebook_cells():
    """The README's notebook code is the notebook this file executes, cell for cell."""
    readme = (ROOT / "README.md").read_text()
    missing = [c.source for c in nbformat.read(NOTEBOOK, as_version=4).cells
               if c.cell_type == "code" and f"```python\n{c.source}\n```" not in readme]
    assert not missing, "README.md lacks these cells of tests/notebooks/readme_snippet.ipynb:\n\n" + \
        "\n\n".join(missing)
