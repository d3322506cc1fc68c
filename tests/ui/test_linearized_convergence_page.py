"""The served linearised lab in Chromium (issue 23): learning cut short by its budget shows a
badge per method with the free energy's last rise per evaluation, and "Continue learning" runs
the same budget again from the learnt values (evaluations add up, F does not fall)."""

from __future__ import annotations

import pathlib
import re
import urllib.parse

import pytest
from playwright.sync_api import expect

from bokeh_page import WATCH_DOCUMENT_JS, ConsoleErrors, LabPage, open_app, wait_until_quiet

ROOT = pathlib.Path(__file__).resolve().parents[2]
APP = ROOT / "apps" / "linearized.py"
LOAD_MS, UPDATE_MS, LEARN_MS = 60_000, 30_000, 90_000


@pytest.mark.browser
def test_a_budget_cut_learning_shows_its_badge_and_continue_learning_goes_on(page, panel_server, tmp_path):
    url = panel_server(APP)
    lab = LabPage(page, ConsoleErrors(page), url, len(url.log_text()))
    page.set_default_timeout(UPDATE_MS)
    page.set_viewport_size({"width": 1500, "height": 1000})
    query = "?max_evals=5&n_features=60&methods=" + urllib.parse.quote('["egp","eks"]')
    open_app(page, url + query, timeout=LOAD_MS)
    page.evaluate(WATCH_DOCUMENT_JS)
    status = page.locator("#job-status")
    page.get_by_role("button", name="Learn hyperparameters").click()
    expect(status).to_have_attribute("data-state", "done", timeout=LEARN_MS)
    badge = page.locator('#badges [data-kind="not-converged"][data-method="eks"]')
    expect(badge).to_be_visible()
    expect(badge).to_contain_text("EKS: learning did not converge")
    expect(badge).to_contain_text("budget of 5 evaluations")
    expect(badge).to_contain_text(re.compile(r"best free energy rose by \S+ per evaluation"))
    expect(page.locator("#badges")).not_to_contain_text("ignored URL values")
    expect(page.locator("#hyper-table tr[data-method='uks']")).to_have_count(0)  # EGP and EKS only
    row = page.locator("#hyper-table tr[data-method='eks']")
    expect(row).to_contain_text("(5 evaluations")
    page.screenshot(path=str(tmp_path / "linearized-badge.png"))
    print(f"screenshot: {tmp_path / 'linearized-badge.png'}")
    button = page.get_by_role("button", name=re.compile(r"^Continue learning EKS"))
    expect(button).to_be_visible()
    button.click()
    expect(status).to_contain_text("continued in", timeout=LEARN_MS)
    expect(row).to_contain_text("(10 evaluations")
    wait_until_quiet(page)
    lab.assert_healthy()
