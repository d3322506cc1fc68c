"""Regression tests of issue 14's linearised-lab bugs 7, 8 and 9, without a browser.

7: a typed g that is not finite where the methods evaluate it is refused before it is accepted,
   and a long paste is reported with its real length and the limit;
8: the upload's row limit is the one the page states;
9: the figures' cosmetics: no empty legend box, the close-up's right axis beside its plot, the
   step lengths of the MAP-objective chart drawn where they cannot overlap or be clipped.
"""

import numpy as np
import panel as pn
import pytest
from bokeh.models import LinearAxis, Text

from gpexplorer.likelihoods.expressions import MAX_LENGTH
from gpexplorer.ui.linearized import settings as cfg
from gpexplorer.ui.linearized.lab import LinearizedLab


@pytest.fixture
def lab():
    return LinearizedLab()


# --- bug 7: typed expressions ---------------------------------------------------------------------

def test_expression_that_overflows_on_the_prior_range_is_refused_and_the_model_kept(lab):
    lab.settings.param.update(forward="custom", expression="f^3 + f")
    results = lab.results
    lab.settings.expression = "exp(exp(exp(f)))"
    assert lab.forward.name == "f^3 + f" and lab.results is results  # nothing was re-run with it
    message = lab.expression_message.object
    assert "expression-error" in message and "is inf at f = 1.9" in message
    assert "[-4, 4]" in message and "prior" in message  # where, and why there
    assert all(r.error is None for r in lab.results.values())
    assert "contains" not in lab.badge_pane.object  # no "y contains NaN" from the methods


@pytest.mark.parametrize("text", ["log(f)", "1/f", "sqrt(f)"])
def test_expressions_undefined_where_the_methods_start_are_refused(lab, text):
    lab.settings.param.update(forward="custom", expression=text)
    assert lab.expression_error and "must be finite" in lab.expression_error
    assert lab.forward.name == "sin" and all(r.error is None for r in lab.results.values())


def test_the_checked_range_follows_the_prior_variance():
    s = cfg.LinearizedSettings(forward="custom", expression="exp(f)")
    assert cfg.checked_range(s) == (-4.0, 4.0)  # +-5 sd of the default variance 0.64
    s.variance = 4.0
    assert cfg.checked_range(s) == (-10.0, 10.0)
    s.variance = 0.01  # never narrower than the toy problem's own latent prior
    assert cfg.checked_range(s) == (-4.0, 4.0)
    assert cfg.forward_model(s).name == "exp(f)"
    s.expression = "exp(exp(f))^8"  # finite on [-4, 4] (exp(54.6 * 8) = 1e190) but too large
    with pytest.raises(ValueError, match="larger than"):
        cfg.forward_model(s)


def test_a_long_paste_is_reported_with_its_real_length_and_the_limit(lab):
    text = "f+" * 20_000 + "f"  # 40,001 characters
    lab.settings.param.update(forward="custom", expression=text)
    assert f"40,001 characters; the limit is {MAX_LENGTH}" in lab.expression_error
    # the box keeps such a paste whole (Panel's TextInput cuts at 5,000 characters by default)
    controls = lab.controls()
    for forward in ("sin", "custom"):  # pn.Param makes a new box each time it is shown again
        lab.settings.forward = forward
    boxes = [w for w in controls.select(pn.widgets.TextInput) if w.name == "Custom g(f)"]
    assert len(boxes) == 1 and boxes[0].max_length == cfg.EXPRESSION_BOX_CHARS >= 40_001
    lab.settings.expression = "f" * cfg.EXPRESSION_BOX_CHARS  # what a longer paste arrives as
    assert f"at least {cfg.EXPRESSION_BOX_CHARS:,} characters" in lab.expression_error


# --- bug 8: the upload's stated limits ------------------------------------------------------------

def test_the_upload_states_the_row_limit_it_enforces(lab):
    assert f"{cfg.MAX_UPLOAD_ROWS:,} rows" in lab.upload.label
    n = cfg.MAX_UPLOAD_ROWS + 1
    lab.upload.filename = "long.csv"
    lab.upload.value = ("x,y\n" + "".join(f"{i},{np.sin(i)}\n" for i in range(n))).encode()
    assert "upload-error" in lab.upload_message.object
    assert f"{cfg.MAX_UPLOAD_ROWS:,}" in lab.upload_message.object


# --- bug 9: figure cosmetics ----------------------------------------------------------------------

def _legend(figure):
    (legend,) = figure.legend
    return legend


def test_no_empty_legend_beside_an_empty_plot(lab):
    assert not _legend(lab.profile.figure).visible  # nothing profiled yet
    assert _legend(lab.objective.chart).visible
    lab.settings.methods = []
    assert not _legend(lab.objective.chart).visible
    assert not any(item.visible for item in _legend(lab.objective.chart).items)
    lab.settings.methods = ["egp"]
    assert _legend(lab.objective.chart).visible


def test_the_closeups_right_axis_sits_beside_the_plot_and_the_legend_outside_it(lab):
    right = lab.closeup.figure.right
    assert isinstance(right[0], LinearAxis) and right[-1] is _legend(lab.closeup.figure)


def test_step_lengths_are_not_text_labels_inside_the_objective_chart(lab):
    lab.settings.forward = "tanh2"  # there UGP's steps are cut (issue 14's screenshot)
    assert not lab.objective.chart.select({"type": Text})  # labels overlapped and were clipped
    steps = lab.objective.steps
    cut = {m: src.data for m, src in steps.sources.items() if len(src.data["iteration"])}
    assert "ugp" in cut
    for m, data in cut.items():
        trace = lab.results[m].trace
        expected = [t.alpha for t in trace if t.step_cuts and t.status == "accepted"]
        np.testing.assert_allclose(data["alpha"], expected)
    assert steps.figure.x_range is lab.objective.chart.x_range  # the iterations line up
    low = min(min(d["alpha"]) for d in cut.values())
    assert steps.figure.y_range.start <= low and steps.figure.y_range.end >= 1.0
