"""Issue 14 bug 7, what the range check alone misses (without a browser).

A typed g is checked finite, with its slope, on the prior's range of f before it is accepted
(tests/ui/test_linearized_bugs_logic.py). The methods also evaluate g where that range does not
reach: the predictions' Gauss-Hermite nodes lie up to 11.45 posterior sd from the mean. A g that
passes the range check but with which every shown method then fails (``sqrt(f + 4.5)``: finite
on [-4, 4], NaN below -4.5) must be refused the same way, naming why, with the previous g kept;
a g with which only some methods fail is accepted (those methods say why in their rows).
"""

import pytest

from gpexplorer.ui.linearized.lab import LinearizedLab


@pytest.fixture
def lab():
    lab = LinearizedLab()
    lab.settings.param.update(forward="custom", expression="f^3 + f")
    assert lab.expression_error is None and all(r.error is None for r in lab.results.values())
    return lab


def test_a_g_every_method_fails_with_is_refused_and_the_previous_one_kept(lab):
    results = lab.results
    lab.settings.expression = "sqrt(f + 4.5)"  # passes the check on [-4, 4]; NaN where the methods predict
    assert lab.forward.name == "f^3 + f" and lab.results is results
    assert all(r.error is None for r in lab.results.values())
    assert lab.expression_error and "every method failed" in lab.expression_error
    assert "not finite" in lab.expression_error  # the methods' own reason
    message = lab.expression_message.object
    assert "expression-error" in message and "previous forward model is kept" in message
    assert "failed" not in lab.metrics_readout.object


def test_a_g_only_some_methods_fail_with_is_accepted(lab):
    lab.settings.expression = "exp(f^3)"  # the Taylor methods' predictions overflow, the unscented ones do not
    assert lab.expression_error is None and lab.forward.name == "exp(f^3)"
    failed = {m for m, r in lab.results.items() if r.error}
    assert failed and failed != set(lab.results)


def test_after_a_refused_g_a_good_one_is_accepted_again(lab):
    lab.settings.expression = "sqrt(f + 4.5)"
    lab.settings.expression = "tanh(2*f)"
    assert lab.expression_error is None and lab.forward.name == "tanh(2*f)"
    assert "expression-ok" in lab.expression_message.object
    assert all(r.error is None for r in lab.results.values())


def test_with_no_method_shown_the_closeup_still_draws_g_so_its_ranges_can_be_set(lab):
    """Bug 9: every closeup source empty made BokehJS warn "could not set initial ranges"."""
    lab.settings.methods = []
    g = lab.closeup.g.data
    assert len(g["f"]) > 0 and len(g["f"]) == len(g["g"])
    assert not lab.closeup.legend.visible and "no method shown" in lab.closeup.figure.title.text
    lab.settings.methods = ["ugp"]
    assert lab.closeup.legend.visible and "no method shown" not in lab.closeup.figure.title.text


def test_the_metrics_table_blames_uploaded_data_only_for_uploaded_data(lab):
    """With no method shown on the toy problem the table said "No test points (uploaded data)"."""
    lab.settings.methods = []
    assert "uploaded data" not in lab.metrics_readout.object
    lab.settings.methods = ["ugp"]
    assert "uploaded data" not in lab.metrics_readout.object


def test_a_good_g_typed_while_no_csv_is_uploaded_clears_the_refusal(lab):
    lab.settings.expression = "sqrt(f + 4.5)"
    lab.settings.dataset = "upload"  # nothing uploaded: no data to run the methods on
    lab.settings.expression = "tanh(2*f)"
    assert lab.expression_error is None and "expression-ok" in lab.expression_message.object
    assert "no CSV uploaded" in lab.error
