"""Presenter mode for a projector: larger type, explanations folded into "?" buttons, the sidebar
folded away, so the main plot gets the width of a 1024 x 768 or 1280 x 720 screen.

It is a per-session choice read from the URL (``?presenter=1``); the page's toggle reloads the
page with the flag flipped and every other setting kept, since the address bar already mirrors
the lab's state. Nothing global changes: the larger type is a Bokeh theme on this session's
document, set by the template's design (:class:`PresenterDesign`) when the document is made, so
the first paint already has it (a theme set once the page had loaded made every tick label jump
from 13 to 17 px seconds after the plots appeared), and CSS on this page's template.
"""

from __future__ import annotations


import panel as pn
import param
from bokeh.themes import Theme
from panel.theme.bootstrap import Bootstrap, BootstrapDefaultTheme

__all__ = ["KEY", "active", "toggle_button", "PRESENTER_CSS", "PresenterDesign", "NOTE_TOGGLE_WIDTH"]

KEY = "presenter"
NOTE_TOGGLE_WIDTH = 34
#: page text (widgets, readouts, notes) one step larger; Bokeh widgets read --bokeh-font-size
PRESENTER_CSS = """
:root { --bokeh-font-size: 15px; --pn-font-size: 15px; font-size: 17px; }
.title { font-size: 1.6em !important; }
"""
#: figure text for the back of the room (defaults only: a size a figure sets itself stays, so the
#: labs' figures and legends leave these sizes to the theme)
THEME = {"attrs": {
    "Title": {"text_font_size": "18px"},
    "Axis": {"axis_label_text_font_size": "17px", "major_label_text_font_size": "16px"},
    "Legend": {"label_text_font_size": "16px", "glyph_height": 18, "glyph_width": 24},
    "ColorBar": {"major_label_text_font_size": "16px", "title_text_font_size": "16px"},
}}


class PresenterTheme(BootstrapDefaultTheme):
    """Bootstrap's light theme with the presenter's figure text (:data:`THEME`)."""

    bokeh_theme = param.ClassSelector(class_=(Theme, str), default=Theme(json=THEME))


class PresenterDesign(Bootstrap):
    """The Bootstrap design whose default theme is :class:`PresenterTheme`: a template built
    with ``design=PresenterDesign`` puts the theme on its document before anything is drawn."""

    _themes = {**Bootstrap._themes, "default": PresenterTheme}


def _flag(value) -> bool:
    if isinstance(value, (list, tuple)):
        value = value[-1] if value else ""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def active() -> bool:
    """Whether this session asked for presenter mode (``?presenter=1``)."""
    args = pn.state.session_args if pn.state.curdoc is not None else None
    return bool(args) and _flag(args.get(KEY))


def toggle_button():
    """"Presenter mode" on/off: reloads this page with the flag flipped (state kept)."""
    on = active()
    button = pn.widgets.Button(label="Normal mode" if on else "Presenter mode", color="light",
                               css_classes=["gpx-presenter-toggle"], width=150)

    # In the browser: the address bar holds the state in use (``ui/address_bar.py``), which the
    # server's copy of the URL may not have caught up with
    button.js_on_click(args={"key": KEY, "on": not on}, code="""
        const query = new URLSearchParams(window.location.search);
        query.delete(key);
        if (on) query.set(key, '1');
        const search = query.toString();
        window.location.search = search ? '?' + search : '';
    """)
    return button
