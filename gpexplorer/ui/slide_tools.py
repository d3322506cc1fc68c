"""Slides from a lab (issue 28): one figure of the page as a high-resolution PNG or an SVG, and the
link to the page's current state on the clipboard.

Everything happens in the browser, on the figure as it is drawn (its legend included):
BokehJS renders the plot into an SVG context (``PlotView.export("svg")``), which is the SVG
file; the PNG is that SVG drawn onto a canvas :data:`PNG_SCALE` times the figure's size, so it is
sharp on a projector whatever the screen's pixel ratio. Nothing is rendered on the server and no
package is added. The link is ``window.location``, which the lab's :class:`AddressBar` keeps equal
to the state in use.

Stable handles for the tests: the component's element has ``data-last-export`` (JSON: figure,
format, bytes, width, height) after an export and ``data-copied`` (the link) after a copy.
"""

from __future__ import annotations

import param
from panel.custom import JSComponent

__all__ = ["SlideTools", "PNG_SCALE"]

#: the PNG's pixels per screen pixel of the figure
PNG_SCALE = 3


class SlideTools(JSComponent):
    """A figure menu with *PNG (3x)* and *SVG* download buttons, and *Copy link*. ``figures``:
    {label: the Bokeh figure's ``name``}, in menu order (a figure in a tab that is not open says
    so on its button instead of downloading)."""

    figures = param.Dict(default={}, doc="label -> Bokeh figure name")
    scale = param.Integer(default=PNG_SCALE, bounds=(1, 8))

    _esm = """
    function findView(name) {
      const doc = window.Bokeh.documents[0];
      const fig = doc.get_model_by_name(name);
      if (fig == null) return null;
      const found = [];
      const walk = (v) => { if (v.model === fig) found.push(v); for (const c of (v.child_views ?? [])) walk(c); };
      for (const root of window.Bokeh.index.roots) walk(root);
      return found.find((v) => v.canvas_view && v.canvas_view.el.getBoundingClientRect().width > 0) ?? found[0] ?? null;
    }

    function save(blob, filename) {
      const a = document.createElement('a');
      a.href = URL.createObjectURL(blob);
      a.download = filename;
      document.body.appendChild(a);
      a.click();
      setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
    }

    async function svgOf(view) {
      const blob = await view.export('svg', false).to_blob();
      const text = await blob.text();
      return new Blob([text], {type: 'image/svg+xml'});
    }

    async function pngOf(view, scale) {
      const svg = await svgOf(view);
      const {width, height} = view.canvas_view.bbox ?? view.bbox;
      const img = new Image();
      const url = URL.createObjectURL(svg);
      await new Promise((ok, fail) => { img.onload = ok; img.onerror = fail; img.src = url; });
      const canvas = document.createElement('canvas');
      canvas.width = Math.round(width * scale);
      canvas.height = Math.round(height * scale);
      const ctx = canvas.getContext('2d');
      ctx.fillStyle = 'white';
      ctx.fillRect(0, 0, canvas.width, canvas.height);
      ctx.scale(scale, scale);
      ctx.drawImage(img, 0, 0, width, height);
      URL.revokeObjectURL(url);
      const blob = await new Promise((ok) => canvas.toBlob(ok, 'image/png'));
      return {blob, width: canvas.width, height: canvas.height};
    }

    export function render({ model, el }) {
      const box = document.createElement('div');
      box.style.cssText = 'display:flex;flex-wrap:wrap;gap:4px;align-items:center;font-size:0.9em';
      const label = document.createElement('span');
      label.textContent = 'Slide:';
      const menu = document.createElement('select');
      menu.setAttribute('aria-label', 'Figure to export');
      menu.style.maxWidth = '11em';
      const button = (text, title) => {
        const b = document.createElement('button');
        b.textContent = text;
        b.title = title;
        b.className = 'gpx-slide-button';
        b.style.cssText = 'padding:2px 8px;border:1px solid #bbb;border-radius:4px;background:#f8f8f8;cursor:pointer';
        return b;
      };
      const png = button('PNG (' + model.scale + 'x)', 'Download the figure as a high-resolution PNG');
      const svg = button('SVG', 'Download the figure as an SVG (vector, legend included)');
      const copy = button('Copy link', 'Copy the link to this state of the page');
      const fill = () => {
        menu.innerHTML = '';
        for (const [text, name] of Object.entries(model.figures)) {
          const o = document.createElement('option');
          o.value = name; o.textContent = text; menu.appendChild(o);
        }
        const any = Object.keys(model.figures).length > 0;
        for (const part of [label, menu, png, svg]) part.style.display = any ? '' : 'none';
      };
      const run = async (format) => {
        const name = menu.value;
        const view = findView(name);
        const shown = view != null && view.canvas_view.el.getBoundingClientRect().width > 0;
        if (!shown) {  // in a tab that is not open: nothing drawn to export
          el.dataset.lastExport = JSON.stringify({figure: name, error: 'not on screen'});
          const b = format === 'svg' ? svg : png, text = b.textContent;
          b.textContent = 'Open its tab first';
          setTimeout(() => { b.textContent = text; }, 1500);
          return;
        }
        let out;
        if (format === 'svg') {
          const blob = await svgOf(view);
          const {width, height} = view.canvas_view.bbox ?? view.bbox;
          out = {blob, width, height};
        } else {
          out = await pngOf(view, model.scale);
        }
        save(out.blob, name + '.' + format);
        el.dataset.lastExport = JSON.stringify({figure: name, format, bytes: out.blob.size,
                                                width: out.width, height: out.height});
      };
      png.addEventListener('click', () => run('png'));
      svg.addEventListener('click', () => run('svg'));
      copy.addEventListener('click', async () => {
        const link = window.location.href;
        try {
          await navigator.clipboard.writeText(link);
        } catch (err) {  // no clipboard permission: the old way, through a selected text box
          const t = document.createElement('textarea');
          t.value = link; document.body.appendChild(t); t.select();
          document.execCommand('copy'); t.remove();
        }
        el.dataset.copied = link;
        copy.textContent = 'Copied';
        setTimeout(() => { copy.textContent = 'Copy link'; }, 1500);
      });
      box.append(label, menu, png, svg, copy);
      el.appendChild(box);
      fill();
      model.on('figures', fill);
    }
    """
