"""Widgets and small layout pieces the labs share: prompt sliders and buttons, and a view with
its explanation beside it. (The labs' kernel, feature and likelihood choices come from the
registries: :data:`gpexplorer.kernels.KERNELS` and the others, each class with its label.)"""

from __future__ import annotations

import panel as pn

from gpexplorer.ui import presenter
from gpexplorer.ui.markup import TextBlock, card_header

__all__ = ["PROMPT_MS", "PromptFloatSlider", "PromptIntSlider", "PromptButton", "note",
           "with_note", "folded_in_presenter_mode"]

PROMPT_MS = 5  # Panel batches widget events for 50 ms; a third of the 150 ms budget for a re-evaluation


class PromptFloatSlider(pn.widgets.FloatSlider):
    """A FloatSlider whose changes reach Python without Panel's 50 ms batching window.

    Plain sliders, not EditableFloatSlider: each editable slider's JS link forced a full
    document recompute while the page was built (0.18 s each, measured)."""

    _debounce = PROMPT_MS


class PromptIntSlider(pn.widgets.IntSlider):
    """An IntSlider whose changes reach Python without Panel's 50 ms batching window (a count whose
    every value redraws a view at once, such as the random-features lab's D)."""

    _debounce = PROMPT_MS


class PromptButton(pn.widgets.Button):
    """A Button whose clicks reach Python without Panel's 50 ms batching window."""

    _debounce = PROMPT_MS


def note(html, width):
    """A short explanation in small print, ``width`` pixels wide; in presenter mode folded into a
    "?" toggle that shows it (``ui/presenter.py``)."""
    if presenter.active():
        text, toggle = _folded(html, width)
        return pn.Column(toggle, text)
    return TextBlock(html, width=width, styles={"font-size": "0.85em"})


def _folded(html, width):
    """The note hidden, and a "?" toggle that shows it (in the browser: no server round trip)."""
    text = TextBlock(html, width=width, styles={"font-size": "0.9em"})
    text.visible = False
    toggle = pn.widgets.Toggle(name="?", width=presenter.NOTE_TOGGLE_WIDTH, button_type="light",
                               css_classes=["gpx-note-toggle"])
    toggle.jslink(text, value="visible")
    return text, toggle


def with_note(item, html, width):
    """``item`` (a Bokeh figure or a Panel object) at full width with its explanation beside it;
    in presenter mode the explanation is folded under a "?" toggle and the item takes the width."""
    if not isinstance(item, pn.viewable.Viewable):
        item = pn.pane.Bokeh(item, sizing_mode="stretch_width")
    if presenter.active():
        text, toggle = _folded(html, None)
        return pn.Column(pn.Row(item, toggle, sizing_mode="stretch_width"), text, sizing_mode="stretch_width")
    return pn.Row(item, note(html, width), sizing_mode="stretch_width")


def folded_in_presenter_mode(block):
    """``block`` (a page's introduction, any Panel object) as it is; in presenter mode hidden
    under a "?" toggle that shows it, as :func:`with_note` folds the explanations."""
    if not presenter.active():
        return block
    block.visible = False
    toggle = pn.widgets.Toggle(name="?", width=presenter.NOTE_TOGGLE_WIDTH, button_type="light",
                               css_classes=["gpx-note-toggle"])
    toggle.jslink(block, value="visible")
    return pn.Column(toggle, block, sizing_mode="stretch_width")


def control_cards(settings, groups, widgets, extras=None):
    """One card per group of settings (title -> parameter names), its widgets generated from the
    Param object with the ``widgets`` overrides, followed by ``extras[title]`` (uploads, ...)."""
    extras = extras or {}
    cards = []
    for title, names in groups.items():
        # every widget stretches to the card: Panel's fixed 300 px default overflows a narrow
        # sidebar (1024 px screens: the selects and slider tracks crossed the card's edge)
        specs = {}
        for name in names:
            given = widgets.get(name)
            spec = dict(given) if isinstance(given, dict) else ({"type": given} if given is not None else {})
            spec.setdefault("sizing_mode", "stretch_width")
            specs[name] = spec
        panel = pn.Param(settings, parameters=names, widgets=specs, show_name=False, sizing_mode="stretch_width")
        # the padding keeps slider tracks and dropdowns off the card's border (issue 14 bug 9)
        cards.append(pn.Card(panel, *extras.get(title, ()), header=card_header(title), sizing_mode="stretch_width",
                             styles={"padding": "0 8px 6px 8px"}))
    return cards
