"""The two ends of the classroom load benchmark (``classroom_load.py``): ``gpexplorer serve`` in its
own process group with its memory, and one student's tab on the wire as a Bokeh websocket client
session (HTTP GET, websocket, pull, ``document_ready``, slider moves)."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import pathlib
import re
import socket
import subprocess
import sys
import threading
import time

import psutil
from bokeh.protocol import Protocol
from bokeh.protocol.receiver import Receiver
from tornado.httpclient import AsyncHTTPClient, HTTPRequest
from tornado.websocket import websocket_connect

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from server_process import free_port, stop_process_group  # noqa: E402

DOCUMENT_READY = {"kind": "MessageSent", "msg_type": "bokeh_event",
                  "msg_data": {"type": "event", "name": "document_ready", "values": {"type": "map", "entries": []}}}
_ids = itertools.count(1)

# --- the server ----------------------------------------------------------------------------------

class Server:
    """``gpexplorer serve`` in its own process group, logging to a file; memory of its process tree."""

    def __init__(self, log_dir, num_procs=1, app=None, prepare=(), prepare_sessions=30):
        """``gpexplorer serve`` (with ``--prepare`` for each link of ``prepare``), or ``panel serve
        app`` alone when ``app`` (a file) is given."""
        self.port = free_port()
        self.log_path = pathlib.Path(log_dir) / f"classroom-serve-{self.port}.log"
        self.command = ([sys.executable, "-m", "gpexplorer.cli", "serve", "--port", str(self.port)] if app is None else
                        [sys.executable, "-m", "panel", "serve", str(app), "--port", str(self.port),
                         "--allow-websocket-origin", f"127.0.0.1:{self.port}"])
        if num_procs != 1:
            self.command += ["--num-procs", str(num_procs)]
        for link in prepare:
            self.command += ["--prepare", link, "--prepare-sessions", str(prepare_sessions)]
        self.process = None

    def start(self, timeout=120.0):
        env = dict(os.environ)
        env.setdefault("NUMBA_CACHE_DIR", str(ROOT / ".numba_cache"))  # as tests/conftest.py
        with open(self.log_path, "wb") as out:
            self.process = subprocess.Popen(self.command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                            start_new_session=True)
        deadline = time.monotonic() + timeout
        while self.process.poll() is None and time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"server not listening (exit status {self.process.poll()}):\n{self.log_text()[-3000:]}")

    def processes(self):
        root = psutil.Process(self.process.pid)
        return [root, *root.children(recursive=True)]

    def memory(self):
        """{"rss_mb", "pss_mb" (None where unreadable), "processes"} summed over the process tree."""
        rss, pss, procs = 0, 0, self.processes()
        for p in procs:
            try:
                info = p.memory_full_info()
                rss, pss = rss + info.rss, (pss + info.pss) if pss is not None else None
            except (psutil.AccessDenied, AttributeError):
                rss, pss = rss + p.memory_info().rss, None
            except psutil.NoSuchProcess:
                continue
        return {"rss_mb": rss / 1e6, "pss_mb": None if pss is None else pss / 1e6, "processes": len(procs)}

    def cpu_seconds(self):
        return sum(t.user + t.system for t in (p.cpu_times() for p in self.processes()))

    def log_text(self):
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def wait_for_log(self, text, count=1, timeout=300.0):
        """Wait until ``text`` has appeared ``count`` times in the server's log; False on timeout."""
        deadline = time.monotonic() + timeout
        while self.log_text().count(text) < count:
            if time.monotonic() > deadline or self.process.poll() is not None:
                return False
            time.sleep(0.2)
        return True

    def stop(self):
        stop_process_group(self.process)


class MemorySampler:
    """Peak RSS of the server tree, sampled every ``period`` s on a thread (a context manager)."""

    def __init__(self, server, period=0.5):
        self.server, self.period, self.peak, self._stop = server, period, 0.0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.wait(self.period):
            try:
                self.peak = max(self.peak, sum(p.memory_info().rss for p in self.server.processes()) / 1e6)
            except psutil.Error:
                pass

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


# --- one client session --------------------------------------------------------------------------

def _walk_objects(value, found):
    """Collect every model ``{"type": "object", "id": ...}`` in a document or patch JSON."""
    if isinstance(value, dict):
        if value.get("type") == "object" and "id" in value:
            found[value["id"]] = value
        for v in value.values():
            _walk_objects(v, found)
    elif isinstance(value, list):
        for v in value:
            _walk_objects(v, found)


def _event_model_ids(content):
    return {e.get("model", {}).get("id") for e in content.get("events", []) if isinstance(e.get("model"), dict)}


class ClientSession:
    """One student's tab, on the wire: HTTP GET, websocket, pull, document_ready, slider moves."""

    def __init__(self, url, slider_title, source_name):
        self.url, self.slider_title, self.source_name = url, slider_title, source_name
        self.models, self.slider, self.source_ids = {}, None, set()
        self.socket, self.receiver = None, Receiver(Protocol())
        self.last_message, self.errors, self.closed, self.patches = time.perf_counter(), [], False, 0
        self._waiter, self._reader, self._pulled = None, None, None

    async def open(self, quiet=1.0, timeout=120.0):
        """Load the page and wait until the slider and the plot source exist and the page is quiet."""
        t0 = time.perf_counter()
        # tornado's client queues all but 10 requests (max_clients) and fails those that wait longer
        # than connect_timeout (20 s: "Timeout in request queue"): a class of browsers does not queue
        client = AsyncHTTPClient(max_clients=1000, force_instance=True)
        try:
            html = (await client.fetch(self.url, request_timeout=timeout, connect_timeout=timeout)).body.decode()
        finally:
            client.close()
        token = re.search(r'"token":"([^"]+)"', html).group(1)
        self.socket = await websocket_connect(HTTPRequest(self.url.replace("http", "ws", 1) + "/ws", connect_timeout=timeout,
                                                          request_timeout=timeout),
                                              subprotocols=["bokeh", token], max_message_size=20_000_000)
        ack = await self._read()
        if ack.msgtype != "ACK":
            raise RuntimeError(f"expected ACK, got {ack.msgtype}")
        self._pulled = asyncio.Event()
        self._reader = asyncio.ensure_future(self._read_forever())
        await self._send("PULL-DOC-REQ", {})
        await asyncio.wait_for(self._pulled.wait(), timeout)  # patches may arrive before the reply
        await self._send("PATCH-DOC", {"events": [DOCUMENT_READY]})
        deadline = time.perf_counter() + timeout
        while (self.slider is None or not self.source_ids or time.perf_counter() - self.last_message < quiet):
            if time.perf_counter() > deadline or self.closed:
                raise TimeoutError(f"page not ready (slider {self.slider}, sources {self.source_ids})")
            await asyncio.sleep(0.05)
        return time.perf_counter() - t0 - quiet

    def move(self, value):
        """Release the slider at ``value``; returns a future with the seconds until new plot data."""
        loop = asyncio.get_running_loop()
        self._waiter = (time.perf_counter(), loop.create_future())
        events = [{"kind": "ModelChanged", "model": {"id": self.slider["id"]}, "attr": attr, "new": value}
                  for attr in ("value", "value_throttled")]
        asyncio.ensure_future(self._send("PATCH-DOC", {"events": events}))
        return self._waiter[1]

    async def click(self, label):
        """Press the button labelled ``label`` (the ``button_click`` event BokehJS sends)."""
        button = self.find_model(lambda m: m["name"].endswith("Button") and m["attributes"].get("label") == label)
        values = {"type": "map", "entries": [["model", {"id": button["id"]}]]}
        event = {"kind": "MessageSent", "msg_type": "bokeh_event",
                 "msg_data": {"type": "event", "name": "button_click", "values": values}}
        await self._send("PATCH-DOC", {"events": [event]})

    def find_model(self, predicate):
        """The one model (its JSON) for which ``predicate`` is true; LookupError otherwise."""
        found = [m for m in self.models.values() if predicate(m)]
        if len(found) != 1:
            raise LookupError(f"{len(found)} models match")
        return found[0]

    async def close(self):
        if self.socket is not None:
            self.socket.close()
        if self._reader is not None:
            await asyncio.wait([self._reader], timeout=5)

    # protocol --------------------------------------------------------------------------
    async def _send(self, msgtype, content):
        header = json.dumps({"msgid": str(next(_ids)), "msgtype": msgtype})
        for fragment in (header, "{}", json.dumps(content)):
            await self.socket.write_message(fragment)

    async def _read(self):
        while True:
            fragment = await self.socket.read_message()
            if fragment is None:
                self.closed = True
                return None
            message = await self.receiver.consume(fragment)
            if message is not None:
                self.last_message = time.perf_counter()
                return message

    async def _read_forever(self):
        while (message := await self._read()) is not None:
            if message.msgtype == "ERROR":
                self.errors.append(str(message.content)[:300])
            elif message.msgtype == "PULL-DOC-REPLY":
                self._learn(message.content)
                self._pulled.set()
            elif message.msgtype == "PATCH-DOC":
                self.patches += 1
                self._learn(message.content)
                if self._waiter is not None and _event_model_ids(message.content) & self.source_ids:
                    (start, future), self._waiter = self._waiter, None
                    if not future.done():  # not already given up (--timeout)
                        future.set_result(time.perf_counter() - start)

    def _learn(self, content):
        """Register the models a document or patch defines; find the slider and the plot source."""
        found = {}
        _walk_objects(content, found)
        self.models.update(found)
        for model in found.values():
            attrs = model.get("attributes", {})
            if model.get("name") == "Slider" and attrs.get("title") == self.slider_title:
                self.slider = model
            if model.get("name") == "ColumnDataSource" and self.source_name in ("*", attrs.get("name")):
                self.source_ids.add(model["id"])
