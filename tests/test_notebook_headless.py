"""A lab in a Jupyter kernel applies its fit (issue 24 defect 11).

``BlackBoxLab()`` starts a fit as it is built. In a kernel there is no Bokeh server session
(``pn.state.curdoc`` is None), so the served page's periodic callback was never registered and
the lab said "running" forever, although the job had finished. The notebooks below run in a real
kernel of this venv (nbclient, as ``nbconvert --execute`` does):

* headless: the lab is never displayed; a cell awaits (the kernel's loop runs) or blocks until
  the job is over, and the next cell reads the status;
* displayed, as in a live front end: the lab is shown (its Bokeh models exist, tied to a comm)
  and *Fit* is pressed as the front end's message would press it (inside the displayed document,
  ``set_curdoc``); the displayed status model must show the new result.

A browser-side Jupyter front end is not installed here; the displayed case checks the models
Panel sends through the comm, which is what a front end renders.
"""

import json

import nbformat
import pytest
from notebook_kernel import execute


SETUP = "import asyncio, json, time\nimport gpexplorer\ngpexplorer.notebook()"
WAIT = """
async def settled(lab, timeout=180):
    start = time.monotonic()
    while 'data-state="running"' in lab.status.object:
        assert time.monotonic() - start < timeout, lab.status.object
        await asyncio.sleep(0.05)
    return time.monotonic() - start
"""


def run_cells(sources, tmp_path):
    """Execute the cells in a fresh kernel of this interpreter; the last line each cell prints."""
    nb = execute(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources]), tmp_path, timeout=300)
    printed = []
    for cell in nb.cells:
        text = "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")
        printed.append(text.strip().splitlines()[-1] if text.strip() else None)
    return printed


@pytest.mark.slow
def test_a_headless_lab_applies_its_fit(tmp_path):
    printed = run_cells([
        SETUP + WAIT,
        "from gpexplorer.ui import BlackBoxLab\nlab = BlackBoxLab()\nprint(json.dumps(lab.job.state))",
        # awaiting lets the kernel's loop run: the result is applied as soon as the job ends
        "waited = await settled(lab)\nprint(json.dumps([lab.job.state, lab.status.object, waited]))",
        # a second fit, waited for by blocking the kernel: the result is applied before the next cell
        "lab.request_fit()\nlab.job.join(180)\nprint(json.dumps(lab.job.state))",
        "print(json.dumps(lab.status.object))",
    ], tmp_path)
    assert json.loads(printed[1]) == "running"
    state, status, waited = json.loads(printed[2])
    assert state == "done" and 'data-state="done"' in status and "fitted" in status, status
    assert json.loads(printed[3]) == "done"
    assert 'data-state="done"' in json.loads(printed[4]), printed[4]


@pytest.mark.slow
def test_a_displayed_lab_shows_the_fit_it_started_and_the_one_fit_pressed(tmp_path):
    printed = run_cells([
        SETUP + WAIT,
        "from gpexplorer.ui import BlackBoxLab\nlab = BlackBoxLab()\nlab",  # displayed: comm-backed models
        """
(status_model, _), = lab.status._models.values()
await settled(lab)
first = status_model.text
from panel.io.state import set_curdoc
with set_curdoc(status_model.document):  # as the front end's click arrives through the comm
    lab.fit_button.clicks += 1
started = status_model.text
await settled(lab)
print(json.dumps([first, started, status_model.text, lab.status.object]))
""",
    ], tmp_path)
    first, started, final, status = json.loads(printed[2])
    assert 'data-state="done"' in first, first  # the fit the lab started as it was built
    assert 'data-state="running"' in started, started
    assert 'data-state="done"' in final and final == status, (final, status)  # the displayed view shows it
