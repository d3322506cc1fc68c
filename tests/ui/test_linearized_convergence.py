"""The linearised lab says when learning ended on its budget rather than its search's own
convergence test, and offers to continue (issue 23): a badge per method with the free energy's
last rise per evaluation, and "Continue learning", which never lowers the free energy and
extends the evaluations count. Driven without a browser, as tests/ui/test_linearized_logic.py."""

import re

import pytest

from gpexplorer.ui.linearized.lab import LinearizedLab


def finish(lab, timeout=180):
    assert lab.job.join(timeout) in ("done", "failed", "cancelled")
    lab.poll_job()
    return lab.job.state


@pytest.fixture
def lab():
    lab = LinearizedLab()
    lab.settings.param.update(methods=["egp", "eks"], n_features=60, max_evals=5)
    return lab


def badge(lab, method):
    match = re.search(rf'<div class="gpx-badge" data-kind="not-converged" data-reason="budget" '
                      rf'data-method="{method}">(.*?)</div>', lab.badge_pane.object)
    return match and match.group(1)


def test_a_tiny_budget_shows_a_badge_per_method_and_the_offer_to_continue(lab):
    assert not lab.continue_button.visible and "not-converged" not in lab.badge_pane.object
    lab.start_learning()
    assert finish(lab) == "done"
    eks = lab.fitted["eks"]
    assert eks["reason"] == "budget" and eks["converged"] is False and eks["evaluations"] == 5
    text = badge(lab, "eks")
    assert text and "EKS: learning did not converge" in text and "budget of 5 evaluations" in text
    rate = re.search(r"best free energy rose by (\S+) per evaluation", text).group(1)
    assert float(rate) == pytest.approx(eks["last_change_per_evaluation"], rel=5e-3)
    assert lab.continue_button.visible and "EKS" in lab.continue_button.label
    assert "5 more evaluations" in lab.continue_button.label
    if lab.fitted["egp"]["reason"] == "converged":  # Fisher scoring may stop on its own test within 5
        assert badge(lab, "egp") is None and "EGP" not in lab.continue_button.label


def test_continue_learning_never_lowers_the_free_energy_and_extends_the_evaluations(lab):
    lab.start_learning()
    assert finish(lab) == "done"
    before = {m: dict(v) for m, v in lab.fitted.items()}
    todo = lab.unfinished_learning()
    assert "eks" in todo
    lab.continue_button.clicks += 1  # as the page's button does
    assert lab.learn_button.disabled and lab.continue_button.disabled  # a job runs
    assert finish(lab) == "done" and "continued in" in lab.status.object
    for m in todo:
        assert lab.fitted[m]["free_energy"] >= before[m]["free_energy"] - 1e-9 * abs(before[m]["free_energy"])
        assert lab.fitted[m]["evaluations"] > before[m]["evaluations"]
        assert lab.results[m].free_energy == pytest.approx(lab.fitted[m]["free_energy"], rel=1e-9)
    for m in set(before) - set(todo):  # a search that had converged is left alone
        assert lab.fitted[m]["evaluations"] == before[m]["evaluations"]
    assert lab.mode == "fitted"


def test_a_search_that_converges_gets_no_badge_and_changed_settings_take_the_offer_away(lab):
    lab.settings.param.update(methods=["egp"], max_evals=150)
    lab.start_learning()
    assert finish(lab) == "done"
    assert lab.fitted["egp"]["reason"] == "converged" and badge(lab, "egp") is None
    assert not lab.continue_button.visible
    lab.settings.param.update(methods=["eks"], max_evals=5)
    lab.start_learning()
    assert finish(lab) == "done" and lab.continue_button.visible
    lab.settings.kappa = 1.0  # the learnt values belonged to the old model: discarded with the offer
    assert lab.fitted is None and not lab.continue_button.visible and badge(lab, "eks") is None
