"""Browser-test fixtures: Debian's Chromium for pytest-playwright and ``panel serve`` subprocesses.

* ``browser_type_launch_args`` points pytest-playwright at ``$CHROMIUM`` (default
  ``/usr/bin/chromium``); never run ``playwright install``. A missing binary skips the browser
  tests locally but fails them when ``$CI`` is set: CI must never silently skip them.
* ``panel_server`` is a session-scoped factory: ``panel_server(path_to_app_py)`` starts
  ``python -m panel serve`` on a free localhost port (once per app path per session), waits for
  HTTP 200 and returns the app URL (a :class:`ServedApp`, i.e. a ``str`` that also gives access to
  the server log). All servers are stopped (process group killed) at session end.
* Every test under ``tests/ui/`` that uses a browser page is marked ``browser``.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from gpexplorer.cli import SERVER_ENVIRONMENT
from server_process import free_port, stop_process_group

UI_DIR = pathlib.Path(__file__).resolve().parent
ROOT = UI_DIR.parent.parent
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
SERVER_START_TIMEOUT = 60.0  # seconds until the app must answer HTTP 200
LOG_TAIL_CHARS = 4000


def pytest_collection_modifyitems(config, items):
    """Mark every test under tests/ui/ that drives a browser (uses ``page``) as ``browser``."""
    for item in items:
        if UI_DIR in pathlib.Path(item.path).resolve().parents and "page" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """Launch Debian's Chromium headless; skip locally / fail in CI if it is missing."""
    executable = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    if not (os.path.isfile(executable) and os.access(executable, os.X_OK)):
        message = f"Chromium not found at {executable!r} (set $CHROMIUM or apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(f"{message}; browser tests must not be skipped in CI", pytrace=False)
        pytest.skip(message)
    return {
        **browser_type_launch_args,
        "executable_path": executable,
        "headless": True,
        "args": CHROMIUM_ARGS,
    }


class ServedApp(str):
    """URL of an app served by :func:`serve_app`; also exposes the server's combined stdout/stderr.

    Bokeh logs exceptions raised in server-side callbacks only here, never in the browser, so
    tests should also check e.g. ``"Traceback" not in served.log_text()``.
    """

    log_path: pathlib.Path

    def __new__(cls, url: str, log_path: pathlib.Path):
        instance = super().__new__(cls, url)
        instance.log_path = log_path
        return instance

    @property
    def url(self) -> str:
        """The app URL as a plain ``str``."""
        return str(self)

    def log_text(self) -> str:
        """Everything the server process has written so far."""
        return self.log_path.read_text(errors="replace")

    def log_tail(self, chars: int = LOG_TAIL_CHARS) -> str:
        """The last ``chars`` characters of the server log."""
        return self.log_text()[-chars:]


def serve_app(app_path, log_dir) -> tuple[ServedApp, subprocess.Popen]:
    """Start ``panel serve app_path`` on a free port and wait until the app answers HTTP 200.

    Returns the app URL and the process (stop it with :func:`server_process.stop_process_group`). The server runs in its own
    session (process group) with cwd at the repo root, inherits ``NUMBA_CACHE_DIR`` (set by
    tests/conftest.py) and logs to ``log_dir/<app>-<port>.log``. Fails the test, with the log
    tail, if the server dies or does not answer within ``SERVER_START_TIMEOUT`` seconds.
    """
    app_path = pathlib.Path(app_path).resolve()
    port = free_port()
    url = f"http://127.0.0.1:{port}/{app_path.stem}"
    log_path = pathlib.Path(log_dir) / f"{app_path.stem}-{port}.log"
    env = dict(os.environ)
    env.setdefault("NUMBA_CACHE_DIR", str(ROOT / ".numba_cache"))  # same default as tests/conftest.py
    env.setdefault("OPENBLAS_NUM_THREADS", SERVER_ENVIRONMENT["OPENBLAS_NUM_THREADS"])  # as gpexplorer serve runs
    command = [
        sys.executable, "-m", "panel", "serve", str(app_path),
        "--port", str(port), "--address", "127.0.0.1",
        f"--allow-websocket-origin=127.0.0.1:{port}",
    ]
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env=env,
                                   start_new_session=True)
    served = ServedApp(url, log_path)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never via $http_proxy
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while True:
        if process.poll() is not None:
            pytest.fail(f"panel serve {app_path.name} exited with {process.returncode}:\n"
                        f"{served.log_tail()}", pytrace=False)
        try:
            with opener.open(url, timeout=5) as response:
                if response.status == 200:
                    return served, process
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        if time.monotonic() > deadline:
            stop_process_group(process)
            pytest.fail(f"panel serve {app_path.name} did not answer 200 at {url} within "
                        f"{SERVER_START_TIMEOUT:.0f} s:\n{served.log_tail()}", pytrace=False)
        time.sleep(0.2)


@pytest.fixture(scope="session")
def panel_server(tmp_path_factory):
    """Factory ``panel_server(app_path) -> ServedApp``: one server per app path for the session.

    Server logs go to pytest's basetemp (``panel-serve-logs*``), which outlives the run.
    """
    log_dir = tmp_path_factory.mktemp("panel-serve-logs")
    servers: dict[pathlib.Path, tuple[ServedApp, subprocess.Popen]] = {}

    def start(app_path) -> ServedApp:
        key = pathlib.Path(app_path).resolve()
        if key not in servers:
            servers[key] = serve_app(key, log_dir)
        return servers[key][0]

    yield start
    for _, process in servers.values():
        stop_process_group(process)


@contextlib.contextmanager
def serving_gpexplorer(log_path, *arguments):
    """``gpexplorer serve --port P *arguments`` (the front page and every lab) on a free port, as a
    user starts it; yields the base URL once the front page answers. The log must hold no
    traceback at the end."""
    from bokeh_page import server_log_problems

    port = free_port()
    with open(log_path, "wb") as log:
        process = subprocess.Popen([sys.executable, "-m", "gpexplorer.cli", "serve", "--port", str(port), *arguments],
                                   cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ),
                                   start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    deadline = time.monotonic() + 120
    try:
        while True:
            assert process.poll() is None, log_path.read_text()
            try:
                with opener.open(base + "/", timeout=30) as response:
                    assert response.status == 200
                    break
            except OSError:
                assert time.monotonic() < deadline, log_path.read_text()
                time.sleep(0.2)
        yield base
    finally:
        stop_process_group(process)
    log = server_log_problems(log_path.read_text())
    assert "Traceback" not in log, log[-3000:]


@pytest.fixture(scope="session")
def gpexplorer_serving():
    """:func:`serving_gpexplorer`, for a test's own ``gpexplorer serve`` with arguments."""
    return serving_gpexplorer


@pytest.fixture(scope="session")
def gpexplorer_server(tmp_path_factory):
    """``gpexplorer serve`` as a user starts it (:func:`serving_gpexplorer`); yields (base URL, log path)."""
    log_path = tmp_path_factory.mktemp("gpexplorer-serve") / "serve.log"
    with serving_gpexplorer(log_path) as base:
        yield base, log_path
