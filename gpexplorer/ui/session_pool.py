"""Sessions built before a class arrives: ``gpexplorer serve --prepare PAGE`` (issue 24, defect 13).

A lab's session costs its server about 0.6 s of one core (Panel and Bokeh building and
serialising some 600 models), and one server process builds one session at a time: 30 students
opening a link together waited 26 s for the last page. Every student who opens the same link
gets the same page, so the server can build those pages while it is idle and hand one out per
request:

- :class:`SessionPool` keeps ``size`` documents of one link (a page and its query string) built
  and serialised. It refills one document at a time, once the sessions it handed out have ended
  (or :data:`REFILL_AFTER_S` after the last was handed out), and only while the server is quiet:
  nothing handed out or ended for :data:`QUIET_S` and this process below :data:`BUSY_SHARE` of a
  core over the last :data:`POLL_S`. So refilling never competes with a class moving sliders, and
  the new documents reuse the memory the class's sessions gave back (built beside them, the
  server kept 30 % more after the class had gone: ``tests/benchmarks/classroom_load.py``).
- :func:`install` hooks Bokeh's ``ApplicationContext.create_session_if_needed`` (the one place a
  served session is made, for the page request and the websocket alike): a request whose page and
  query match a pool with a document ready gets a session around that document, under the
  request's own session id, token, headers and cookies. Anything else is built on request as
  before; so is everything once a pool is empty.
- The first pull of a prepared document sends the serialisation made while preparing
  (:class:`PreparedServerSession`), unless the document changed since.

A prepared document is built with its page's query (URL state, lesson, presenter mode), so the
page it shows is the page that request asks for; the session context is the request's from the
moment the session is handed out. Building in the pool waits for a first run's warm-up
(:mod:`gpexplorer.ui.preparing`), as a page does.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import time
import weakref
from urllib.parse import parse_qs, urlsplit

__all__ = ["SessionPool", "install", "is_prepared", "parse_link", "query_key", "pools"]

log = logging.getLogger(__name__)

POLL_S = 0.25  #: how often an unfilled pool looks at the server's load
QUIET_S = 5.0  #: no refill until this long after a prepared session was handed out or ended
REFILL_AFTER_S = 600.0  #: refill even with handed-out sessions still open this long after the last
BUSY_SHARE = 0.25  #: no refill while this process used more than this share of a core
MAX_SIZE = 200  #: prepared sessions per link (each holds its page's models: about 7 MB)

_PREPARED = "_gpexplorer_prepared"
_ids = itertools.count()
_POOLS: dict[str, dict[tuple, SessionPool]] = {}


def parse_link(link: str) -> tuple[str, str]:
    """``"sparse_regression?lesson=x&step=1"`` (or with a leading ``/``) as (``"/sparse_regression"``,
    ``"lesson=x&step=1"``)."""
    parts = urlsplit(link.strip())
    path = "/" + parts.path.strip("/")
    if path == "/" or parts.scheme or parts.netloc:
        raise ValueError(f"--prepare takes a page of this server, such as sparse_regression or "
                         f"'sparse_regression?lesson=...', not {link!r}")
    return path, parts.query


def query_key(arguments) -> tuple:
    """A request's query arguments (name -> list of bytes or str) as a hashable, ordered key;
    Bokeh's own ``bokeh-session-id`` argument is left out."""
    def text(value):
        return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)

    return tuple(sorted((name, tuple(text(v) for v in values)) for name, values in (arguments or {}).items()
                        if name != "bokeh-session-id"))


def is_prepared(doc) -> bool:
    """Whether ``doc`` is being (or was) built by a pool rather than for a waiting request: such a
    page builds all of itself at once (``ui/sparse/layout.py``), as its serialisation is made then."""
    context = doc.session_context if doc is not None else None
    return bool(getattr(context, _PREPARED, False))


def pools() -> dict[str, dict[tuple, SessionPool]]:
    """The installed pools: page path -> query key -> pool."""
    return _POOLS


class _Prepared:
    """One document built ahead, its session context and its first serialisation."""

    def __init__(self, document, context, serialized):
        self.document, self.context, self._serialized = document, context, serialized
        self._dist_url = document.template_variables.get("dist_url")
        document.on_change(self._changed)

    def _changed(self, event):
        from bokeh.document.events import DocumentPatchedEvent

        if isinstance(event, DocumentPatchedEvent):  # not a session callback added or removed
            self._serialized = None

    def take_serialized(self):
        """The serialisation made while preparing, once, and only while the document is unchanged
        (Panel points the stylesheets at their server when it sends the page, without an event)."""
        serialized, self._serialized = self._serialized, None
        self.document.remove_on_change(self._changed)  # the live session's changes need no watching
        return serialized if self.document.template_variables.get("dist_url") == self._dist_url else None


class SessionPool:
    """Up to ``size`` prepared documents of one page (``path``, e.g. ``/sparse_regression``) at
    one query string (``""``: the page's defaults)."""

    def __init__(self, path: str, query: str = "", size: int = 30):
        if not 1 <= int(size) <= MAX_SIZE:
            raise ValueError(f"prepared sessions per page must be 1 to {MAX_SIZE}, not {size}")
        self.path, self.query, self.size = path, query, int(size)
        self.arguments = {k: [v.encode() for v in vs] for k, vs in parse_qs(query, keep_blank_values=True).items()}
        self.key = query_key(self.arguments)
        self._ready: list[_Prepared] = []
        self._last_take = self._last_event = -float("inf")
        self.live = 0  #: sessions handed out and not yet ended

    @property
    def ready(self) -> int:
        return len(self._ready)

    def take(self):
        """A prepared document (a ``_Prepared``), or None when none is ready."""
        if not self._ready:
            return None
        self._last_take = self._last_event = time.monotonic()
        self.live += 1
        prepared = self._ready.pop(0)
        prepared.document.on_session_destroyed(self._ended)
        return prepared

    def _ended(self, session_context):
        self.live -= 1
        self._last_event = time.monotonic()

    async def prepare_one(self, app_context):
        """Build one document of this page as Bokeh would for a request, and serialise it."""
        from bokeh.document import Document
        from bokeh.server.contexts import BokehSessionContext, _RequestProxy
        from tornado.httputil import HTTPHeaders, HTTPServerRequest

        doc = Document()
        context = BokehSessionContext(f"prepared-{next(_ids)}", app_context.server_context, doc,
                                      logout_url=app_context._logout_url)
        uri = self.path + (f"?{self.query}" if self.query else "")
        request = HTTPServerRequest(method="GET", uri=uri, headers=HTTPHeaders({"Host": "localhost"}))
        context._request = _RequestProxy(request, arguments=dict(self.arguments), cookies={}, headers={})
        setattr(context, _PREPARED, True)
        doc._session_context = weakref.ref(context)  # the _Prepared holds the context
        application = app_context.application
        await application.on_session_created(context)
        application.initialize_document(doc)
        await _run_first_callbacks(doc)
        _point_stylesheets_as_served(doc)
        prepared = _Prepared(doc, context, doc.to_json())
        self._ready.append(prepared)
        return prepared

    def _may_refill(self, busy_share: float) -> bool:
        now = time.monotonic()
        return ((self.live == 0 or now - self._last_take >= REFILL_AFTER_S) and now - self._last_event >= QUIET_S
                and busy_share < BUSY_SHARE)

    async def keep_filled(self, app_context):
        """Refill while the server is quiet, for as long as the server runs (on its event loop)."""
        from gpexplorer.ui.preparing import warmup_under_way

        while True:
            wall, cpu = time.monotonic(), time.process_time()
            await asyncio.sleep(POLL_S)
            busy = (time.process_time() - cpu) / max(time.monotonic() - wall, 1e-9)
            if self.ready >= self.size or warmup_under_way() or not self._may_refill(busy):
                continue
            try:
                await self.prepare_one(app_context)
            except Exception:  # a page that fails to build is built on request instead, with its message
                log.exception("gpexplorer: preparing a session of %s failed; pages are built on request", self.path)
                return
            if self.ready == self.size:
                print(f"gpexplorer: {self.size} sessions of {self.path}"
                      f"{'?' + self.query if self.query else ''} prepared", flush=True)


async def _run_first_callbacks(doc, rounds=20):
    """Run what the page left for its first ticks (a lab's first drawing: ``LabBase.next_tick``)
    and its timeouts (charts drawn once the page is quiet), waiting out each timeout, until none
    is left: the prepared page and its serialisation are the page as it settles, where a served
    session would send these as changes right after the page. Periodic callbacks stay."""
    import inspect

    from bokeh.document.callbacks import invoke_with_curdoc
    from bokeh.server.callbacks import NextTickCallback, TimeoutCallback

    for _ in range(rounds):
        pending = [cb for cb in doc.session_callbacks if isinstance(cb, (NextTickCallback, TimeoutCallback))]
        if not pending:
            return
        wait_ms = max((cb.timeout for cb in pending if isinstance(cb, TimeoutCallback)), default=0)
        if wait_ms:
            await asyncio.sleep(wait_ms / 1000)
        for cb in pending:
            if isinstance(cb, NextTickCallback):
                doc.remove_next_tick_callback(cb)
            else:
                doc.remove_timeout_callback(cb)
            result = invoke_with_curdoc(doc, cb.callback)
            if inspect.isawaitable(result):
                await result


def _point_stylesheets_as_served(doc):
    """What Panel does to a document as it sends its page (``panel.io.server.server_html_page_for_session``):
    the stylesheets' URLs point at this server (or the CDN) instead of the CDN, silently."""
    from bokeh.settings import settings
    from panel.io.resources import CDN_DIST, LOCAL_DIST, patch_model_css
    from panel.io.state import set_curdoc, state

    if settings.resources(default="server") == "server":
        with set_curdoc(doc):
            dist_url = f"{state.rel_path}/{LOCAL_DIST}" if state.rel_path else LOCAL_DIST
    else:
        dist_url = CDN_DIST
    doc.template_variables["dist_url"] = dist_url
    for root in doc.roots:
        patch_model_css(root, dist_url=dist_url)


@functools.cache
def _prepared_server_session():
    """The ServerSession subclass (made once, on first use: Bokeh's server is imported late)."""
    from bokeh.protocol.messages.pull_doc_reply import pull_doc_reply
    from bokeh.server.session import ServerSession

    class PreparedServerSession(ServerSession):
        """A served session around a prepared document: its first pull sends the serialisation
        made while preparing (the document's models are already marked as sent by it)."""

        def __init__(self, *args, prepared, **kwargs):
            super().__init__(*args, **kwargs)
            self._prepared = prepared

        async def _handle_pull(self, message, connection):  # a coroutine, as the method it replaces
            serialized = self._prepared.take_serialized()
            if serialized is None:
                print(f"gpexplorer: session {self.id[:8]} changed before its first pull; serialising it again",
                      flush=True)
                return await super()._handle_pull(message, connection)
            reply = pull_doc_reply(pull_doc_reply.create_header(request_id=message.header["msgid"]), {},
                                   {"doc": serialized.content})
            reply.add_buffers(*serialized.buffers)
            return reply

    return PreparedServerSession


def _adopt(app_context, session_id, request, token):
    """A session around a prepared document for this request, or None (then Bokeh builds one)."""
    from bokeh.server.contexts import _RequestProxy
    from bokeh.util.token import get_token_payload

    by_query = _POOLS.get(app_context.url)
    if (not by_query or not session_id or request is None or session_id in app_context._sessions
            or session_id in app_context._pending_sessions):
        return None
    payload = get_token_payload(token) if token else {}
    arguments = payload.get("arguments", getattr(request, "arguments", None))
    pool = by_query.get(query_key(arguments))
    prepared = pool.take() if pool is not None else None
    if prepared is None:
        return None
    context = prepared.context
    context._id, context._token = session_id, token
    context._request = _RequestProxy(request, arguments=arguments, cookies=payload.get("cookies"),
                                     headers=payload.get("headers"))
    session = _prepared_server_session()(session_id, prepared.document, io_loop=app_context._loop, token=token,
                                         prepared=prepared)
    app_context._sessions[session_id] = session
    context._set_session(session)
    app_context._session_contexts[session_id] = context
    print(f"gpexplorer: session {session_id[:8]} of {app_context.url} from its prepared pool ({pool.ready} left)",
          flush=True)
    return session


def install(links, size: int = 30) -> list[SessionPool]:
    """Keep ``size`` sessions of each link (``"page"`` or ``"page?query"``) prepared in this
    server process, from its start. Call before the server starts (``gpexplorer serve --prepare``)."""
    from bokeh.server.contexts import ApplicationContext

    for link in links:
        path, query = parse_link(link)
        pool = SessionPool(path, query, size)
        _POOLS.setdefault(path, {})[pool.key] = pool
    installed = [p for by_query in _POOLS.values() for p in by_query.values()]
    if getattr(ApplicationContext, _PREPARED, False):
        return installed
    create, load = ApplicationContext.create_session_if_needed, ApplicationContext.run_load_hook

    async def create_session_if_needed(self, session_id, request=None, token=None):
        session = _adopt(self, session_id, request, token)
        return session if session is not None else await create(self, session_id, request, token)

    def run_load_hook(self):
        load(self)
        for pool in _POOLS.get(self.url, {}).values():
            asyncio.ensure_future(pool.keep_filled(self))

    ApplicationContext.create_session_if_needed = create_session_if_needed
    ApplicationContext.run_load_hook = run_load_hook
    setattr(ApplicationContext, _PREPARED, True)
    return installed
