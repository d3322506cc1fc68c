"""A ``panel serve`` process of a test's own, for tests that kill it or measure its CPU time
(the shared ``panel_server`` fixture serves other tests' sessions too)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import time
import urllib.request

from gpexplorer.cli import SERVER_ENVIRONMENT
from server_process import free_port, stop_process_group

ROOT = pathlib.Path(__file__).resolve().parents[2]


class OwnServer:
    """``panel serve apps/<app>.py`` on a free port; ``url``, ``process``, ``cpu_seconds()``, ``stop()``."""

    def __init__(self, app, log_path):
        port = free_port()
        self.url = f"http://127.0.0.1:{port}/{app}"
        self.log_path = pathlib.Path(log_path)
        env = dict(os.environ)
        env.setdefault("NUMBA_CACHE_DIR", str(ROOT / ".numba_cache"))
        env.setdefault("OPENBLAS_NUM_THREADS", SERVER_ENVIRONMENT["OPENBLAS_NUM_THREADS"])  # as gpexplorer serve runs
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "panel", "serve", str(ROOT / "apps" / f"{app}.py"), "--port", str(port),
                 "--address", "127.0.0.1", f"--allow-websocket-origin=127.0.0.1:{port}"],
                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        deadline = time.monotonic() + 120
        while True:
            assert self.process.poll() is None, self.log_path.read_text()[-3000:]
            try:
                with opener.open(self.url, timeout=30) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, self.log_path.read_text()[-3000:]
            time.sleep(0.3)

    def cpu_seconds(self) -> float:
        """User + system CPU time of the server process so far (its job threads included)."""
        fields = pathlib.Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        stop_process_group(self.process)
