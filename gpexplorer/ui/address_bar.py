"""The page's address bar, written by the server: it always shows the state the lab uses.

Panel's ``Location`` model reads ``window.location`` when its view starts and writes the URL only
once the document is idle, so a ``search`` set while the page was built could be overwritten by
the one the browser came with (issue 14 bug 5: rejected values stayed in the address bar). This
component holds the query string the server wants and replaces the current history entry with it
(``history.replaceState``: no reload, no new Back-button entry) whenever it changes.
"""

from __future__ import annotations

import param
from panel.custom import JSComponent

__all__ = ["AddressBar"]


class AddressBar(JSComponent):
    """Invisible; set ``search`` ("?a=1&b=2" or "") to rewrite the address bar's query string."""

    search = param.String(default=None, allow_None=True)

    _esm = """
    export function render({ model, el }) {
      const apply = () => {
        const search = model.search;
        if (search === null || search === undefined || search === window.location.search) return;
        const url = window.location.pathname + search + window.location.hash;
        window.history.replaceState(window.history.state, '', url);
      };
      apply();
      model.on('search', apply);
      el.style.display = 'none';
    }
    """

    def __init__(self, **params):
        params.setdefault("height", 0)
        params.setdefault("margin", 0)
        super().__init__(**params)
