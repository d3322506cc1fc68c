"""The served black-box lab in Chromium (issue 23): fits cut short by their budget show a badge
per posterior with the ELBO's last change per iteration; Continue runs on from where they
stopped and the ELBO chart's traces grow; in presenter mode the introduction is folded behind
a "?" toggle."""

from __future__ import annotations

import pathlib
import re

import pytest
from playwright.sync_api import expect

from bokeh_page import WATCH_DOCUMENT_JS, ConsoleErrors, LabPage, cds_length, open_app, wait_until_quiet

ROOT = pathlib.Path(__file__).resolve().parents[2]
APP = ROOT / "apps" / "black_box.py"
LOAD_MS, UPDATE_MS, FIT_MS = 60_000, 30_000, 90_000
#: one round of 4 evaluations per block: every posterior ends on its budget
SHORT = "?n_bins=40&M=6&rounds=1&evals_per_block=4&estimator=quadrature"


def open_lab(page, url, query):
    lab = LabPage(page, ConsoleErrors(page), url, len(url.log_text()))
    page.set_default_timeout(UPDATE_MS)
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_app(page, url + query, timeout=LOAD_MS)
    page.evaluate(WATCH_DOCUMENT_JS)
    expect(page.locator("#job-status")).to_have_attribute("data-state", "done", timeout=FIT_MS)
    return lab


@pytest.mark.browser
def test_budget_badges_continue_and_the_folded_introduction(page, panel_server, tmp_path):
    url = panel_server(APP)
    lab = open_lab(page, url, SHORT)
    # FG with quadrature runs natural gradients, whose budget is rounds x evaluations L-BFGS iterations
    for p, label, budget in (("fg", "FG", "4 iterations"), ("mog1", "MoG1", "1 round"), ("mog2", "MoG2", "1 round")):
        badge = page.locator(f'#badges [data-kind="not-converged"][data-posterior="{p}"]')
        expect(badge).to_be_visible()
        expect(badge).to_contain_text(f"{label} did not converge")
        expect(badge).to_contain_text(re.compile(rf"budget of {budget} with the ELBO still rising by \S+ per iteration"))
    page.screenshot(path=str(tmp_path / "black-box-badges.png"))
    print(f"screenshot: {tmp_path / 'black-box-badges.png'}")
    before = {p: cds_length(page, f"elbo-{p}") for p in ("fg", "mog1", "mog2")}
    button = page.get_by_role("button", name=re.compile(r"^Continue FG, MoG1, MoG2"))
    expect(button).to_be_visible()
    button.click()
    expect(page.locator("#job-status")).to_contain_text("continued FG, MoG1, MoG2", timeout=FIT_MS)
    for p, n in before.items():
        page.wait_for_function(f"() => Bokeh.documents[0].get_model_by_name('elbo-{p}').get_length() > {n}")
    wait_until_quiet(page)
    lab.assert_healthy()

    lab = open_lab(page, url, SHORT + "&presenter=1")
    intro = page.get_by_text("a sparse GP whose likelihood is only", exact=False)
    expect(intro).to_be_hidden()
    page.get_by_role("button", name="?", exact=True).first.click()
    expect(intro).to_be_visible()
    page.screenshot(path=str(tmp_path / "black-box-presenter.png"))
    print(f"screenshot: {tmp_path / 'black-box-presenter.png'}")
    wait_until_quiet(page)
    lab.assert_healthy()
