"""Jupyter without internet: load Panel and HoloViews with every resource embedded.

By default a notebook loads BokehJS and Panel's JavaScript and stylesheets from their CDNs
(cdn.bokeh.org, cdn.holoviz.org), so in a classroom without internet nothing renders.
:func:`notebook` (also reachable as ``gpexplorer.notebook()``) loads them inline instead:

>>> import gpexplorer
>>> gpexplorer.notebook()          # instead of pn.extension()

Nothing happens at import; calling :func:`notebook` changes global state of this kernel, and
only this: ``panel.config.inline`` is set, HoloViews' and Panel's notebook extensions are
loaded with inline resources, and a Panel preprocessing hook is registered that embeds the
stylesheets of objects HoloViews renders itself (HoloViews' display path, unlike Panel's own,
leaves their CDN links in place).
"""

from __future__ import annotations

__all__ = ["notebook", "embed_stylesheets"]


def embed_stylesheets(viewable, root):
    """Panel preprocessing hook: replace every CDN stylesheet link under ``root`` by the file's
    text from Panel's installed ``dist`` directory, while ``panel.config.inline`` is set.

    Panel does this for the objects it displays; HoloViews' notebook display hook does not, so
    a plain ``hv.Curve`` would still link ``cdn.holoviz.org``. Links to files Panel does not
    ship are left as they are."""
    import panel as pn
    from bokeh.models import UIElement
    from panel.io.notebook import patch_inline_stylesheets

    if not pn.config.inline:
        return
    for model in root.select({"type": UIElement}):
        patch_inline_stylesheets(model)


def notebook(*extensions, **config):
    """Prepare this Jupyter kernel to show gpexplorer's labs and plots offline.

    Loads HoloViews' bokeh extension and ``pn.extension(*extensions, **config)``, both with
    inline resources, and registers :func:`embed_stylesheets`. Call it once, first, in place of
    ``pn.extension()``; it adds about 3 MB of JavaScript to the notebook's outputs, which is
    what lets the notebook render without a network (and when reopened later).

    Global effects, only when called: sets ``panel.config.inline = True``, loads the notebook
    extensions of HoloViews and Panel into this kernel, appends one preprocessing hook to
    ``panel.viewable.Viewable._preprocessing_hooks`` (once, however often it is called).
    """
    import holoviews as hv
    import panel as pn
    from panel.viewable import Viewable

    pn.config.inline = True
    hv.extension("bokeh", inline=True, logo=False)
    pn.extension(*extensions, inline=True, **config)
    if embed_stylesheets not in Viewable._preprocessing_hooks:
        Viewable._preprocessing_hooks.append(embed_stylesheets)
