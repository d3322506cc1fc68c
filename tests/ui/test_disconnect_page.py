"""A tab whose server died says so (issue 24 defect 12).

The black-box page runs a long fit; its server is killed (SIGKILL) under the open page. The job
status line used to keep showing "running ... iteration N" for ever; it must say that the server
stopped (``gpexplorer.ui.sessions.show_disconnect``, a client-side callback on BokehJS's
``connection_lost`` event).
"""

from __future__ import annotations

import os
import signal

import pytest
from playwright.sync_api import expect

from gpexplorer.ui.sessions import DISCONNECTED_TEXT
from own_server import OwnServer

#: a fit of a minute or more on two cores: still running when the server is killed
LONG_FIT = "?num_samples=3000&M=60&rounds=100&evals_per_block=60"


@pytest.fixture
def server(tmp_path):
    served = OwnServer("black_box", tmp_path / "server.log")
    yield served
    served.stop()


@pytest.mark.browser
def test_a_running_fit_says_the_server_stopped_when_it_dies(page, server):
    page.goto(server.url + LONG_FIT, timeout=120_000)
    status = page.locator("#job-status")
    expect(status).to_have_attribute("data-state", "running", timeout=120_000)
    expect(status).to_contain_text("iteration", timeout=120_000)
    os.killpg(server.process.pid, signal.SIGKILL)
    server.process.wait(30)
    expect(status).to_have_attribute("data-state", "disconnected", timeout=15_000)
    expect(status).to_have_text(DISCONNECTED_TEXT)
    assert page.locator("#job-status[data-state=running]").count() == 0
