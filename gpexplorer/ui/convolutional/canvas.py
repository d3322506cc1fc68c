"""A grid of pixels the user paints with the mouse (or a finger): the patches lab's inducing-patch
editor and its digit canvas.

Painting happens in the browser (no round trip per mouse move); ``values`` (row-major, 0 = blank,
1 = ink) reaches Python when a stroke ends and, during a long stroke, at most every ``sync_ms``.
Two brushes: ``"toggle"`` (a press flips the pixel under it, 0 <-> 1, and the drag paints that
same value: one flipped pixel per tap, for binary patches) and ``"pen"`` (a soft round pen
about two pixels wide, as MNIST's anti-aliased strokes are). Shown as greys, ink dark; values
outside [0, 1] (an optimised inducing patch may hold them) in blue below 0 and red above 1.
``data-*`` attributes on the canvas (``data-canvas``, ``data-strokes``) let tests find it and
see that a stroke was taken.
"""

from __future__ import annotations

import param
from panel.custom import JSComponent

from gpexplorer.ui.widgets import PROMPT_MS

__all__ = ["PixelCanvas"]


class PixelCanvas(JSComponent):
    """``rows`` x ``cols`` pixels, ``pixel`` screen pixels each; see the module docstring."""

    rows = param.Integer(default=28, bounds=(1, 64))
    cols = param.Integer(default=28, bounds=(1, 64))
    values = param.List(default=[], doc="row-major pixel values (0 blank, 1 ink)")
    brush = param.Selector(default="pen", objects=["pen", "toggle"])
    pixel = param.Integer(default=10, bounds=(2, 80), doc="screen pixels per image pixel")
    sync_ms = param.Integer(default=150, doc="during a stroke, send the values at most this often")
    locked = param.Boolean(default=False, doc="ignore the mouse (shown faded)")
    label = param.String(default="canvas", doc="the canvas element's data-canvas attribute")
    strokes = param.Integer(default=0, doc="strokes finished in the browser (each sends the values)")

    _debounce = PROMPT_MS  # a stroke's values reach Python without Panel's 50 ms batching window

    _esm = """
    export function render({ model, el }) {
      const canvas = document.createElement('canvas');
      canvas.style.touchAction = 'none';
      canvas.style.cursor = 'crosshair';
      canvas.style.border = '1px solid #8895a7';
      canvas.style.display = 'block';
      el.appendChild(canvas);
      let vals = [];
      const size = () => [model.rows, model.cols, model.pixel];
      const load = () => {
        const [r, c] = size();
        vals = Array.from({length: r * c}, (_, i) => Number(model.values[i] ?? 0));
      };
      const shade = (v) => {
        if (!(v >= -1e-6)) return 'rgb(70,110,220)';
        if (v > 1 + 1e-6) return 'rgb(215,60,50)';
        const g = Math.round(255 * (1 - v));
        return `rgb(${g},${g},${g})`;
      };
      const draw = () => {
        const [r, c, px] = size();
        canvas.width = c * px; canvas.height = r * px;
        canvas.dataset.canvas = model.label;
        canvas.dataset.strokes = String(model.strokes);
        canvas.style.opacity = model.locked ? '0.45' : '1';
        const ctx = canvas.getContext('2d');
        for (let i = 0; i < r; i++) for (let j = 0; j < c; j++) {
          ctx.fillStyle = shade(vals[i * c + j]);
          ctx.fillRect(j * px, i * px, px, px);
        }
        if (px >= 8) {
          ctx.strokeStyle = 'rgba(120,130,150,0.35)';
          ctx.lineWidth = 1;
          for (let i = 1; i < r; i++) { ctx.beginPath(); ctx.moveTo(0, i * px + 0.5); ctx.lineTo(c * px, i * px + 0.5); ctx.stroke(); }
          for (let j = 1; j < c; j++) { ctx.beginPath(); ctx.moveTo(j * px + 0.5, 0); ctx.lineTo(j * px + 0.5, r * px); ctx.stroke(); }
        }
      };
      let down = false, ink = 1, lastSync = 0, dirty = false, timer = null;
      const cell = (e) => {
        const rect = canvas.getBoundingClientRect();
        const [r, c] = size();
        return [(e.clientY - rect.top) / rect.height * r, (e.clientX - rect.left) / rect.width * c];
      };
      const paint = (e) => {
        const [r, c] = size();
        const [y, x] = cell(e);
        if (model.brush === 'toggle') {
          const i = Math.floor(y), j = Math.floor(x);
          if (i < 0 || j < 0 || i >= r || j >= c) return;
          if (vals[i * c + j] !== ink) { vals[i * c + j] = ink; dirty = true; }
          return;
        }
        for (let i = Math.floor(y - 2); i <= Math.floor(y + 2); i++) for (let j = Math.floor(x - 2); j <= Math.floor(x + 2); j++) {
          if (i < 0 || j < 0 || i >= r || j >= c) continue;
          const d = Math.hypot(i + 0.5 - y, j + 0.5 - x);
          const v = Math.max(0, Math.min(1, 1.6 - d));
          if (v > vals[i * c + j]) { vals[i * c + j] = v; dirty = true; }
        }
      };
      const sync = () => {
        if (timer) { clearTimeout(timer); timer = null; }
        if (!dirty) return;
        dirty = false; lastSync = Date.now();
        model.values = vals.slice();
      };
      canvas.addEventListener('pointerdown', (e) => {
        if (model.locked || e.button > 0) return;
        down = true;
        canvas.setPointerCapture(e.pointerId);
        if (model.brush === 'toggle') {
          const [i, j] = cell(e).map(Math.floor);
          const v = vals[i * model.cols + j] ?? 0;
          ink = v >= 0.5 ? 0 : 1;
        }
        paint(e); draw();
      });
      canvas.addEventListener('pointermove', (e) => {
        if (!down) return;
        paint(e); draw();
        if (dirty && Date.now() - lastSync > model.sync_ms && !timer) timer = setTimeout(sync, 0);
      });
      const end = () => {
        if (!down) return;
        down = false;
        model.strokes = model.strokes + 1;
        sync(); draw();
      };
      canvas.addEventListener('pointerup', end);
      canvas.addEventListener('pointercancel', end);
      for (const name of ['values', 'rows', 'cols', 'pixel', 'locked']) model.on(name, () => { load(); draw(); });
      load(); draw();
    }
    """

    def clear(self):
        """Every pixel blank (sent to the browser)."""
        self.values = [0.0] * (self.rows * self.cols)
