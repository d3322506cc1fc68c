"""A CSV file input that refuses an oversized file in the browser, before anything is sent.

Panel 1.9's FileInput reads any file into one websocket message: a file over the server's message
limit (about 15 MB after base64) closed the session's websocket without a word (issue 14 bug 2).
Its FileDropper has a size limit but loads its scripts from a CDN, which a classroom without
internet does not reach. This component checks ``File.size`` in the browser: a file over
``max_bytes`` is never read, and ``refused`` tells the server its name and size, so the page can
say why. A file within the limit arrives as base64 and is decoded into ``value`` (bytes), with
``filename``, as FileInput's parameters of the same names.

Every file chosen reaches ``value``, an empty one included (issue 24 defect 5: a 0-byte CSV sent
an empty payload, which is no change, so nothing happened and no message said why). The payload
is "<count>:<base64>", the count new for every file read, and ``value`` fires its watchers even
when the bytes equal the previous file's (the same CSV chosen again after another data set).
"""

from __future__ import annotations

import base64
import binascii

import param
from panel.custom import JSComponent

__all__ = ["SizedFileInput"]


class SizedFileInput(JSComponent):
    """``<input type="file">`` with a size limit checked in the browser (see the module docstring)."""

    accept = param.String(default=".csv,text/csv")
    label = param.String(default="")
    max_bytes = param.Integer(default=2_000_000, bounds=(1, None))
    filename = param.String(default=None, allow_None=True)
    value = param.Bytes(default=None, allow_None=True)
    refused = param.Dict(default={}, doc="name and size of the last file refused in the browser")
    payload = param.String(default="", doc='"<count>:<base64 content>" sent by the browser')

    _rename = {"value": None}  # the decoded bytes stay on the server
    _esm = """
    export function render({ model, el }) {
      const label = document.createElement('div');
      label.textContent = model.label;
      label.style.fontSize = '0.9em';
      const input = document.createElement('input');
      let count = 0;
      input.type = 'file';
      input.accept = model.accept;
      input.addEventListener('change', () => {
        const file = input.files[0];
        if (!file) return;
        if (file.size > model.max_bytes) {
          model.refused = {name: file.name, size: file.size, at: Date.now()};
          input.value = '';
          return;
        }
        const reader = new FileReader();
        reader.onload = () => {
          model.filename = file.name;
          count += 1;  // a new payload for every file, an empty one ('data:' gives '') included
          model.payload = Date.now() + '.' + count + ':' + (String(reader.result).split(',')[1] || '');
        };
        reader.readAsDataURL(file);
      });
      el.append(label, input);
    }
    """

    @param.depends("payload", watch=True)
    def _decode(self):
        if not self.payload:
            return
        _, _, content = self.payload.rpartition(":")
        try:
            new = base64.b64decode(content, validate=True)
        except (binascii.Error, ValueError):
            new = b""  # never sent by the page's own script; read as nothing rather than raise
        if new == self.value:
            self.param.trigger("value")  # the same file again: its watchers still run
        else:
            self.value = new
