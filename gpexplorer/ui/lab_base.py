"""What every lab page does the same way: URL sync, state JSON, silenced updates, the next
tick, CSV uploads and the job widgets (the served page around a lab is ``ui/page.py``).

A lab subclasses :class:`LabBase` with its own Param settings (one object per session, the
single source of truth: widgets are generated from it, the URL mirrors it, the JSON export
serialises it) and fills in a few hooks: which settings the URL carries, how changed settings
are applied, how an upload is parsed, what else the JSON holds, and its controls and views.
"""

from __future__ import annotations

import contextlib
import io
import json

import panel as pn

from gpexplorer.ui import url_state
from gpexplorer.ui.address_bar import AddressBar
from gpexplorer.ui.file_input import SizedFileInput
from gpexplorer.ui.jobs import JobControls, JobPoller
from gpexplorer.ui.markup import TextBlock, status_html, upload_html
from gpexplorer.ui.slide_tools import SlideTools
from gpexplorer.ui.uploads import MAX_UPLOAD_BYTES

__all__ = ["LabBase", "next_tick"]


def next_tick(callback):
    """Run ``callback`` on the session's next tick, holding the Bokeh document lock; at once
    outside a server (tests, Jupyter).

    Panel runs some widget events (a TextInput's Enter) as coroutines without the document lock,
    where rewriting a ColumnDataSource raises; a next-tick callback always holds it. It also lets
    a change already made reach the browser before what the callback sends."""
    pn.state.execute(callback, schedule=True)


class LabBase(JobControls, pn.viewable.Viewer):
    """A lab page over a Param settings object; see the module docstring.

    Subclasses set ``state_filename`` and ``upload_label``, call :meth:`_build_shared_widgets`,
    then :meth:`_connect_settings` once their views exist, and define:

    * ``_settings_names()``: settings in the URL, the JSON export and the change handler;
    * ``_settings_changed(names)``: apply a set of changed setting names (``dataset`` when a new
      CSV arrives while the upload is already the data set);
    * ``_parse_upload(contents, filename)``: a Dataset, or ValueError saying what is wrong;
    * ``_state_extras()``: what the JSON holds besides the settings;
    * ``_show_problems()``: redraw the badges after ``url_warning`` changed;
    * ``controls()`` and ``views()``; plus JobControls' ``_job_buttons`` and ``_job_finished``.
    """

    state_filename = "gpexplorer-state.json"
    upload_label = "CSV upload (max 2 MB)"

    def __init__(self, settings, **params):
        self.settings = settings
        super().__init__(**params)
        self.uploaded, self.url_warning = None, None
        self.jobs, self._quiet, self._pending = JobPoller(), False, set()

    # construction ----------------------------------------------------------------------
    def _build_shared_widgets(self):
        """Job status, progress bar, Cancel, the CSV upload with its message, the JSON download."""
        self.status = TextBlock(status_html("idle", ""))
        self.progress = pn.indicators.Progress(value=0, max=100, visible=False, sizing_mode="stretch_width")
        self.cancel_button = pn.widgets.Button(label="Cancel", color="warning", disabled=True)
        self.cancel_button.on_click(lambda _: self.cancel_job())
        self.upload = SizedFileInput(accept=".csv,text/csv", label=self.upload_label, max_bytes=MAX_UPLOAD_BYTES,
                                     sizing_mode="stretch_width")
        self.upload.param.watch(self._on_upload, "value")
        self.upload.param.watch(self._on_refused, "refused")
        self.address_bar = AddressBar()
        self._url_keep, self._page_query, self._address_watched = set(), {}, False
        self.upload_message = TextBlock()
        self.upload_message.visible = False
        self.download = pn.widgets.FileDownload(callback=self._state_json, filename=self.state_filename,
                                                label="Download state (JSON)", color="light")
        self.slide_tools = SlideTools(figures=self.slide_figures(), sizing_mode="stretch_width", margin=(2, 10))

    def slide_figures(self):
        """{label: Bokeh figure name} the slide export offers (labs list their figures)."""
        return {}

    def _url_names(self):
        """Settings mirrored in the URL (and watched); by default those of the JSON export."""
        return self._settings_names()

    def _connect_settings(self, first_load, defer=False):
        """Read the URL into the settings, run ``first_load`` (on the next tick with ``defer``),
        then follow every later change of the settings."""
        self._sync_url()
        if defer:
            next_tick(first_load)
        else:
            first_load()
        self.settings.param.watch(self._on_settings, self._url_names())

    def _sync_url(self):
        """Apply the URL's settings one key at a time (a bad one is named and never takes good
        ones with it), then keep the address bar showing the state used (``ui/url_state.py``)."""
        served = pn.state.curdoc is not None and pn.state.curdoc.session_context is not None
        self.apply_url(url_state.read_query(pn.state.session_args) if served else {})

    def apply_url(self, query):
        """Apply a URL query (name -> text), as :meth:`_sync_url` does with the page's own."""
        names = self._url_names()
        accepted, rejected = url_state.apply_query(self.settings, query, names, self._check_url_value)
        self._url_keep = set(self._url_keys_used(accepted))
        self._page_query = {k: v for k, v in query.items() if k in url_state.PAGE_KEYS}
        if rejected:
            self.url_warning = url_state.describe(rejected)
            self._show_problems()
        if not self._address_watched:
            self._address_watched = True
            self.settings.param.watch(lambda *_: self._update_address(), names)
        self._update_address()

    def _update_address(self):
        self.address_bar.search = url_state.query_of(self.settings, self._url_names(), self._page_query,
                                                     self._url_keep, self._url_overrides())

    def _check_url_value(self, name, value):
        """A reason to refuse a URL value the settings would accept (None: accept). Labs extend it."""
        return None

    def _url_keys_used(self, accepted):
        """The URL keys that describe the state after applying ``accepted`` (a lab may add some)."""
        return accepted

    def _url_overrides(self):
        """Setting name -> the value actually used where it differs from the setting's (a lab's
        refused expression), for the address bar."""
        return {}

    # settings ---------------------------------------------------------------------------
    def _on_settings(self, *events):
        if not self._quiet:
            self._settings_changed({e.name for e in events})

    def _apply_on_next_tick(self, names):
        """Collect changed setting names; the first of a batch schedules :meth:`_apply_pending`."""
        first = not self._pending
        self._pending |= set(names)
        if first:
            next_tick(self._apply_pending)

    def _apply_pending(self):
        names, self._pending = self._pending, set()
        self._apply_settings(names)

    def _apply_settings(self, names):
        """Apply changed setting names collected by :meth:`_apply_on_next_tick`."""
        raise NotImplementedError

    @contextlib.contextmanager
    def _silenced(self):
        """Programmatic updates inside this block do not re-trigger the change handlers."""
        before, self._quiet = self._quiet, True
        try:
            yield
        finally:
            self._quiet = before

    # uploads ----------------------------------------------------------------------------
    def _on_upload(self, event):
        try:
            self.uploaded = self._parse_upload(event.new, self.upload.filename or "upload.csv")
        except ValueError as err:
            self._show(self.upload_message, upload_html(error=err))
            return
        self._show(self.upload_message, upload_html(dataset=self.uploaded))
        if self.settings.dataset == "upload":
            self._settings_changed({"dataset"})
        else:
            self.settings.dataset = "upload"  # -> _on_settings

    def _on_refused(self, event):
        """The browser refused a file over the size limit without sending it: say so."""
        name, size = event.new.get("name", "the file"), float(event.new.get("size", 0))
        self._show(self.upload_message, upload_html(error=ValueError(
            f"{name} is {size / 1e6:.1f} MB; uploads are limited to {MAX_UPLOAD_BYTES / 1e6:g} MB "
            "(the file was not sent)")))

    # export and helpers -----------------------------------------------------------------
    def _state_json(self):
        """The state as JSON (the download's content): every setting, then the lab's extras."""
        state = {"settings": json.loads(self.settings.param.serialize_parameters(subset=self._settings_names()))}
        state.update(self._state_extras())
        return io.StringIO(json.dumps(state, indent=1))

    @staticmethod
    def _show(block, html):
        """A message block takes no space while it is empty."""
        block.object, block.visible = html, bool(html)

    def __panel__(self):
        """Controls left, views right: what Jupyter shows for a lab."""
        return pn.Row(pn.Column(self.controls(), width=330), self.views(), sizing_mode="stretch_width")
