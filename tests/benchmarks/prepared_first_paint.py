"""What one student feels of a prepared session: the sparse page's first paint in Chromium, from a
server that builds each session on request and from one serving it from ``--prepare``.

A script, not a test. A prepared page arrives whole in one message (``gpexplorer/ui/session_pool.py``),
where a page built on request sends its main plot first and the charts below it once the browser
has rendered it (``ui/sparse/layout.py``). This measures, on the page's own clock from navigation
start, (a) the main plot drawn with its data and (b) every chart of the page drawn, alternating
the two servers page by page, one page at a time (no other load). Usage::

    python tests/benchmarks/prepared_first_paint.py [--pages 8]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from load_clients import Server  # noqa: E402

MAIN_DRAWN = """() => { if (!window.Bokeh || !Bokeh.documents.length || !Bokeh.index) return false;
  const s = Bokeh.documents[0].get_model_by_name('mean-vfe'); const roots = Bokeh.index.roots;
  return s != null && s.get_length() > 0 && roots.length > 0 && roots.every((v) => v.has_finished()); }"""
ALL_DRAWN = """() => Bokeh.documents[0].get_model_by_name('sandwich') != null
  && Bokeh.index.roots.every((v) => v.has_finished())"""


def first_paint(browser, url):
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    try:
        page.goto(url, timeout=120_000)
        page.wait_for_function(MAIN_DRAWN, timeout=120_000, polling="raf")
        main = page.evaluate("() => performance.now()")
        page.wait_for_function(ALL_DRAWN, timeout=120_000, polling="raf")
        whole = page.evaluate("() => performance.now()")
        return main, whole
    finally:
        page.close()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pages", type=int, default=8, help="pages opened per server (alternating)")
    p.add_argument("--chromium", default=os.environ.get("CHROMIUM", "/usr/bin/chromium"))
    args = p.parse_args(argv)
    from playwright.sync_api import sync_playwright

    log_dir = pathlib.Path(tempfile.mkdtemp(prefix="first-paint-"))
    servers = {"built on request": Server(log_dir), "prepared": Server(log_dir, prepare=["sparse_regression"],
                                                                       prepare_sessions=args.pages + 2)}
    times = {name: [] for name in servers}
    try:
        for server in servers.values():
            server.start()
        if not servers["prepared"].wait_for_log(f"{args.pages + 2} sessions of /sparse_regression prepared"):
            raise RuntimeError("the prepared pool did not fill")
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=args.chromium)
            for name, server in servers.items():  # one untimed page each: browser caches, imports
                first_paint(browser, f"http://127.0.0.1:{server.port}/sparse_regression")
            for _ in range(args.pages):
                for name, server in servers.items():
                    times[name].append(first_paint(browser, f"http://127.0.0.1:{server.port}/sparse_regression"))
            browser.close()
    finally:
        for server in servers.values():
            server.stop()
    print(f"sparse page, 1600x1000, {args.pages} pages per server, load average {os.getloadavg()[0]:.2f}")
    for name, rows in times.items():
        main_ms, whole_ms = zip(*rows)
        print(f"{name:>17}: main plot drawn median {statistics.median(main_ms):.0f} ms (min {min(main_ms):.0f}), "
              f"whole page drawn median {statistics.median(whole_ms):.0f} ms (min {min(whole_ms):.0f})")


if __name__ == "__main__":
    main()
