"""Issue 24 item 12 (black-box part), without a browser: a refused typed log likelihood does not
stay in the address bar while the table shows the previous fit; the URL reverts to the last
accepted likelihood, the table says it shows that fit, and accepting a new one moves both on.
Also defect 6 on the page: the refusal names the expression and where it fails."""

from __future__ import annotations

import urllib.parse

from gpexplorer.ui.black_box.lab import BlackBoxLab

FAST = {"rounds": 1, "evals_per_block": 3, "M": 5, "n_bins": 30, "posteriors": ["fg"], "estimator": "quadrature"}
GOOD = "y*f - exp(f) - gammaln(y + 1)"
BAD = "-exp(exp(exp(f))) + y*f"


def finish(lab):
    while lab.job is not None and lab.job.state == "running":
        lab.job.join(60)
        lab.poll_job()
    lab.poll_job()


def query(lab):
    return urllib.parse.parse_qs(lab.address_bar.search.lstrip("?"))


def typed_lab():
    lab = BlackBoxLab()
    lab.cancel_job()
    finish(lab)
    lab.settings.param.update(**FAST, likelihood="expression", log_likelihood=GOOD)
    finish(lab)
    assert lab.fit_error is None and lab.results["fg"].error is None
    return lab


def test_a_refused_expression_leaves_the_address_bar_and_the_table_on_the_fit_shown():
    lab = typed_lab()
    fitted = lab.results["fg"]
    assert query(lab)["likelihood"] == ["expression"]
    lab.settings.log_likelihood = BAD
    finish(lab)
    # refused, named with the f where it fails; the previous fit stays
    assert lab.fit_error is not None and BAD in lab.fit_error and "at f = " in lab.fit_error
    assert BAD in lab.badge_pane.object and lab.results["fg"] is fitted
    # the address bar shows the likelihood of the fit on screen, not the refused text
    q = query(lab)
    assert q.get("log_likelihood", [GOOD]) == [GOOD] and "exp(exp" not in lab.address_bar.search
    assert q["likelihood"] == ["expression"]
    # and the table says which fit it shows
    table = lab.metrics_readout.object
    assert 'data-previous="true"' in table and "previous fit" in table and GOOD in table
    # an accepted expression moves the URL and the table on
    lab.settings.log_likelihood = "y*f - exp(f)"
    finish(lab)
    assert lab.fit_error is None and query(lab)["log_likelihood"] == ["y*f - exp(f)"]
    assert 'data-previous="true"' not in lab.metrics_readout.object


def test_a_refused_expression_after_a_registered_likelihood_reverts_the_url_to_that_likelihood():
    lab = BlackBoxLab()
    lab.cancel_job()
    finish(lab)
    lab.settings.param.update(**FAST)
    finish(lab)
    assert lab.fit_error is None and "likelihood" not in query(lab)
    lab.settings.param.update(likelihood="expression", log_likelihood="exp(f) + y")
    finish(lab)
    assert lab.fit_error is not None and "exp(f) + y" in lab.fit_error and "grows without bound" in lab.fit_error
    q = query(lab)
    assert "likelihood" not in q and "log_likelihood" not in q  # the data set's own likelihood, as fitted
    assert "previous fit" in lab.metrics_readout.object
