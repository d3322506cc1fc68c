"""Page text rendered by Bokeh ``Div`` models instead of Panel's HTML/Markdown panes, and the
HTML snippets every lab shows (job status, upload verdict, the tables' style). The number
formatter every lab's readouts use is :func:`gpexplorer.formatting.format_number` (the inference
code's badges use it too).

Any Panel HTML model in a page makes Panel ship bokeh-mathjax (1.7 MB) in case it holds TeX
(``panel.io.resources._panel_use_mathjax``); a Bokeh ``Div`` does not, and parsing that bundle
was a large part of the lab's cold start. The texts here are plain HTML without TeX.
"""

from __future__ import annotations

import html

import panel as pn
from bokeh.models import Div


__all__ = ["STYLE", "status_html", "upload_html", "TextBlock", "card_header",
           "LightBootstrapTemplate"]

#: styles of the readout tables, badges and error boxes (``gpx-table``, ``gpx-badge``, ``gpx-error``)
STYLE = ("<style>.gpx-table td,.gpx-table th{padding:1px 8px;text-align:right}"
         ".gpx-badge{border-radius:6px;padding:4px 8px;margin:3px 0;background:#fff3cd;"
         "border:1px solid #e0b000}.gpx-badge.failure,.gpx-error{background:#f8d7da;"
         "border:1px solid #d9534f;border-radius:6px;padding:4px 8px}</style>")


def status_html(state, message):
    """The background job's status line: ``#job-status`` with ``data-state``."""
    return f'<div id="job-status" data-state="{state}">{html.escape(message)}</div>'


def upload_html(error=None, dataset=None):
    """The CSV upload's verdict: ``#upload-error`` with the reason, or ``#upload-ok``."""
    if error is not None:
        return f'{STYLE}<div id="upload-error" class="gpx-error">Upload rejected: {html.escape(str(error))}</div>'
    return (f'<div id="upload-ok">Loaded {dataset.n} rows, {dataset.input_dim} input column(s) '
            f"from {html.escape(dataset.name)}.</div>")


class TextBlock(pn.widgets.StaticText):
    """HTML shown by a Bokeh Div; ``.object`` reads and replaces it like an HTML pane's ``object``.

    A StaticText widget, because Panel then routes each change through its own update path
    (safe from any session callback); a bare Div changed outside the document lock raises."""

    def __init__(self, html: str = "", width: int | None = None, styles: dict | None = None):
        sizing = {"width": width} if width else {"sizing_mode": "stretch_width"}
        super().__init__(value=html, styles=styles or {}, margin=(5, 10), **sizing)

    @property
    def object(self) -> str:
        return self.value

    @object.setter
    def object(self, html: str):
        self.value = html


def card_header(title: str) -> TextBlock:
    """A Card title as a Div (Panel renders a Card's ``title`` with an HTML pane)."""
    return TextBlock(f'<h3 style="margin:4px 0;font-size:1.05em">{title}</h3>')


class LightBootstrapTemplate(pn.template.BootstrapTemplate):
    """BootstrapTemplate without the two Panel HTML models it adds on its own.

    Its loading spinner and its (unused) script area are Panel HTML models, which alone would
    make Panel ship bokeh-mathjax; the spinner is dropped (the lab shows job progress itself) and
    the script area becomes an empty, zero-size Bokeh Div."""

    def __init__(self, **params):
        params.setdefault("busy_indicator", None)
        super().__init__(**params)
        if "js_area" in self._render_items:
            self._js_area = pn.pane.Bokeh(Div(width=0, height=0, margin=0), width=0, height=0, margin=0)
            self._render_items["js_area"] = (self._js_area, [])
