"""The background job and its poller, without a server (the page calls ``check`` itself)."""

import threading

from gpexplorer.ui.jobs import BackgroundJob, JobPoller


def test_progress_is_throttled_and_the_final_state_is_handed_out_once():
    release = threading.Event()

    def work(job):
        job.report(0.5, "half way")
        release.wait(5)
        return 42

    poller = JobPoller()
    assert poller.check() is None and not poller.running
    poller.start(BackgroundJob("demo", work), poll=lambda: None)
    while poller.job.snapshot()[2] != "half way":
        pass
    assert poller.check() == ("running", 0.5, "half way")
    assert poller.check() is None  # within PROGRESS_EVERY_S of the last progress
    release.set()
    poller.job.join(5)
    assert poller.check() == ("done", 1.0, "half way") and poller.job.result == 42
    assert poller.check() is None  # the result is applied once, not on every later poll


def test_cancel_and_failure_reach_the_poller():
    def slow(job):
        while True:
            job.report(0.1, "working")

    poller = JobPoller()
    poller.start(BackgroundJob("slow", slow), poll=lambda: None)
    assert poller.running
    poller.cancel()
    assert poller.job.join(5) == "cancelled" and poller.check()[0] == "cancelled"

    poller.start(BackgroundJob("broken", lambda job: 1 / 0), poll=lambda: None)
    assert poller.job.join(5) == "failed" and "ZeroDivisionError" in poller.job.error
    assert poller.check()[0] == "failed"
