"""Self-tests of the browser-test infrastructure (tests/bokeh_page.py, tests/ui/conftest.py).

They drive a tiny throwaway Panel app generated into pytest's tmp dir, so they do not depend on
the real dashboards in apps/. The toy app has:

* figure ``toy-figure`` with ColumnDataSource ``toy-points`` (``1 + i`` for x, ``1 + i + offset``
  for y) and an active ``PointDrawTool(add=False)``;
* a Python ``on_change('data')`` callback that writes the mean x and a call counter into
  ``<span id="toy-readout">`` / ``<span id="toy-calls">`` and the mean point into the
  server-only source ``toy-mean``;
* widgets: IntSlider "Points" (number of points), IntInput "Offset" (y offset), Button "Reset".
"""

import math
import textwrap

import pytest
from playwright.sync_api import expect

from bokeh_page import (
    ConsoleErrors,
    cds_data,
    cds_length,
    data_to_page,
    drag_point,
    measure_latency,
    open_app,
    set_widget_value,
    wait_for_change,
)

TOY_APP = textwrap.dedent('''
    """Toy Panel app for tests/ui/test_browser_infra.py (generated; not part of the repo)."""
    import numpy as np
    import panel as pn
    from bokeh.models import ColumnDataSource, PointDrawTool
    from bokeh.plotting import figure


    def points(n, offset):
        i = np.arange(n, dtype=float)
        return {"x": list(1.0 + i), "y": list(1.0 + i + offset)}


    source = ColumnDataSource(points(3, 0), name="toy-points")
    mean = ColumnDataSource({"x": [2.0], "y": [2.0]}, name="toy-mean")
    fig = figure(name="toy-figure", width=400, height=300, x_range=(0, 10), y_range=(0, 10), tools="")
    renderer = fig.scatter("x", "y", source=source, size=14)
    fig.scatter("x", "y", source=mean, size=8, color="red")
    draw = PointDrawTool(renderers=[renderer], add=False)
    fig.add_tools(draw)
    fig.toolbar.active_tap = draw

    readout = pn.pane.HTML('<span id="toy-readout">2.000</span> <span id="toy-calls">0</span>')
    calls = [0]


    def on_data(attr, old, new):
        calls[0] += 1
        mx, my = float(np.mean(new["x"])), float(np.mean(new["y"]))
        mean.data = {"x": [mx], "y": [my]}
        readout.object = f'<span id="toy-readout">{mx:.3f}</span> <span id="toy-calls">{calls[0]}</span>'


    source.on_change("data", on_data)

    slider = pn.widgets.IntSlider(name="Points", start=1, end=6, value=3)
    offset = pn.widgets.IntInput(name="Offset", start=0, end=3, value=0)
    reset = pn.widgets.Button(name="Reset")


    def refresh(*_):
        source.data = points(slider.value, offset.value)


    def on_reset(_):
        slider.value, offset.value = 3, 0


    slider.param.watch(refresh, "value")
    offset.param.watch(refresh, "value")
    reset.on_click(on_reset)
    pn.Column(slider, offset, reset, fig, readout).servable()
''')

@pytest.fixture(scope="module")
def toy_url(tmp_path_factory, panel_server):
    """URL of the toy app served by ``panel serve`` (one server for this module)."""
    path = tmp_path_factory.mktemp("toy") / "toy_app.py"
    path.write_text(TOY_APP)
    return panel_server(path)


@pytest.fixture
def toy(page, toy_url):
    """A fresh page (new Bokeh session) on the toy app, with a console-error collector attached."""
    errors = ConsoleErrors(page)
    open_app(page, toy_url)
    yield page, errors
    errors.assert_none()
    assert "Traceback" not in toy_url.log_text(), toy_url.log_tail()


def test_page_renders_without_errors_and_maps_data_coordinates(toy):
    page, errors = toy
    assert cds_data(page, "toy-points") == {"x": [1.0, 2.0, 3.0], "y": [1.0, 2.0, 3.0]}
    assert cds_length(page, "toy-points") == 3
    expect(page.locator("#toy-readout")).to_have_text("2.000")  # CSS locators pierce shadow DOM
    assert errors.problems == []

    px, py = data_to_page(page, "toy-figure", 5.0, 5.0)
    assert px > 0 and py > 0
    with pytest.raises(ValueError, match="outside the frame"):
        data_to_page(page, "toy-figure", 50.0, 5.0)
    with pytest.raises(LookupError):
        data_to_page(page, "no-such-figure", 1.0, 1.0)


def test_console_errors_collector_catches_errors(page):
    errors = ConsoleErrors(page)
    page.set_content("<p>no server needed</p>")
    page.evaluate("() => console.error('deliberate test error')")
    page.evaluate("() => setTimeout(() => { throw new Error('deliberate uncaught') }, 0)")
    page.wait_for_timeout(100)
    assert any("deliberate test error" in e for e in errors.errors)
    assert any("deliberate uncaught" in e for e in errors.errors)
    with pytest.raises(AssertionError, match="deliberate"):
        errors.assert_none()


def test_drag_point_moves_the_point_and_updates_the_readout(toy):
    page, _ = toy
    drag_point(page, "toy-figure", (1.0, 1.0), (5.0, 6.0))
    expect(page.locator("#toy-readout")).to_have_text("3.333")  # mean of x = 5, 2, 3
    expect(page.locator("#toy-calls")).to_have_text("1")  # exactly one Python on_change per drag
    data = cds_data(page, "toy-points")
    assert data["x"][0] == pytest.approx(5.0, abs=0.05)
    assert data["y"][0] == pytest.approx(6.0, abs=0.05)
    assert data["x"][1:] == [2.0, 3.0]
    assert cds_data(page, "toy-mean")["x"] == [pytest.approx(10 / 3, abs=0.05)]


def test_python_on_change_fires_only_when_the_drag_ends(toy):
    """PointDrawTool edits the source locally while dragging; the server hears about it on release."""
    page, _ = toy
    x0, y0 = data_to_page(page, "toy-figure", 2.0, 2.0)
    x1, y1 = data_to_page(page, "toy-figure", 8.0, 8.0)
    page.mouse.move(x0, y0)
    page.mouse.down()
    page.mouse.move(x1, y1, steps=10)
    assert cds_data(page, "toy-points")["x"][1] == pytest.approx(8.0, abs=0.05)  # moved in the browser
    page.wait_for_timeout(500)
    expect(page.locator("#toy-calls")).to_have_text("0")  # ... but Python has not been told yet
    page.mouse.up()
    expect(page.locator("#toy-calls")).to_have_text("1")
    expect(page.locator("#toy-readout")).to_have_text("4.000")  # mean of x = 1, 8, 3


def test_set_widget_value_syncs_to_the_server(toy):
    page, _ = toy
    set_widget_value(page, "Points", 5)
    assert wait_for_change(page, "() => Bokeh.documents[0].get_model_by_name('toy-points').get_length()", 3) == 5
    with pytest.raises(LookupError, match="0 widgets"):
        set_widget_value(page, "No such widget", 1)


def test_real_widgets_via_playwright_locators(toy):
    """Operate the slider by keyboard, the spinner by typing and the button by clicking."""
    page, _ = toy
    slider = page.get_by_role("slider")  # noUiSlider handle, inside Panel's shadow roots
    slider.focus()
    page.keyboard.press("ArrowRight")
    expect(slider).to_have_attribute("aria-valuenow", "4.0")
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('toy-points').get_length() === 4")

    spinner = page.get_by_label("Offset")  # IntInput -> Bokeh Spinner: <label>Offset</label><input>
    spinner.fill("2")
    spinner.press("Enter")
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('toy-points').data.y[0] === 3")
    assert cds_data(page, "toy-points")["y"] == [3.0, 4.0, 5.0, 6.0]

    page.get_by_role("button", name="Reset").click()  # resets slider, then offset: two updates
    page.wait_for_function("""() => {
      const data = Bokeh.documents[0].get_model_by_name('toy-points').data;
      return data.x.length === 3 && data.y[0] === 1;
    }""")
    assert cds_data(page, "toy-points") == {"x": [1.0, 2.0, 3.0], "y": [1.0, 2.0, 3.0]}


def test_measure_latency_of_widget_and_drag_round_trips(toy):
    page, _ = toy
    widget_ms = measure_latency(page, "toy-points", lambda: set_widget_value(page, "Points", 2))
    assert cds_length(page, "toy-points") == 2
    drag_ms = measure_latency(page, "toy-mean",
                              lambda: drag_point(page, "toy-figure", (2.0, 2.0), (4.0, 4.0)),
                              from_last_input=True)
    assert cds_data(page, "toy-mean")["x"] == [pytest.approx(2.5, abs=0.05)]
    for ms in (widget_ms, drag_ms):
        assert math.isfinite(ms) and 0 < ms < 5_000
