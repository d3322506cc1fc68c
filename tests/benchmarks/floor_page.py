"""The floor of the classroom benchmark: a bare Panel page (the labs' template, one figure with
one line, one slider that redraws it). ``classroom_load.py --page floor`` serves it alone with
``panel serve``: what Panel and Bokeh cost per session before any lab is built."""

import numpy as np
import panel as pn
from bokeh.models import ColumnDataSource
from bokeh.plotting import figure

pn.extension()

x = np.linspace(0.0, 10.0, 200)
source = ColumnDataSource({"x": x, "y": np.sin(x)}, name="floor-line")
fig = figure(height=300, sizing_mode="stretch_width", title="floor")
fig.line("x", "y", source=source)
slider = pn.widgets.FloatSlider(name="Lengthscale", start=0.1, end=5.0, value=1.0)
slider.param.watch(lambda e: source.data.update(y=np.sin(x / e.new)), "value_throttled")
pn.template.BootstrapTemplate(title="floor", sidebar=[slider], main=[pn.pane.Bokeh(fig, sizing_mode="stretch_width")]
                              ).servable(title="floor")
