"""Why the lab rewrites Bokeh ColumnDataSources instead of re-rendering HoloViews elements.

Times one update of the posterior view (5 approximations: band + mean, data, inducing inputs)
both ways: a HoloViews DynamicMap fed through a Pipe (the plotting pipeline runs per element)
and ``PosteriorFigure.update`` (arrays assigned to existing sources), 20 timed updates each,
alternating (after 3 untimed ones each). Run:

    python tests/benchmarks/holoviews_vs_cds.py
"""

import os, sys
import numpy as np
import holoviews as hv
hv.extension("bokeh")
from gpexplorer.ui.sparse.figures import PosteriorFigure
from gpexplorer.sparse.comparison import compare, ParameterSet, default_grid
from gpexplorer import datasets, kernels
from gpexplorer.inducing.placement import initial_inducing_inputs
ds = datasets.load("snelson"); grid = default_grid(ds.X)
Z = initial_inducing_inputs(ds.X, 15, "random", 0)
names = ["exact", "sor", "dtc", "fitc", "vfe"]
comps = [compare(ds, {n: ParameterSet(kernels.SquaredExponential(1.0, 0.5), nv, Z) for n in names}, grid) for nv in (0.05, 0.1)]
x = grid[:, 0]
def overlay(data):
    c = data
    els = []
    for n, r in c.results.items():
        sd = 2 * np.sqrt(r.var_y)
        els.append(hv.Area((x, r.mean - sd, r.mean + sd), vdims=["y", "y2"]).opts(alpha=0.15))
        els.append(hv.Curve((x, r.mean)))
    els.append(hv.Scatter((ds.X[:, 0], ds.y)))
    els.append(hv.Scatter((Z[:, 0], np.full(len(Z), -3.0))))
    return hv.Overlay(els)
pipe = hv.streams.Pipe(data=comps[0])
dmap = hv.DynamicMap(overlay, streams=[pipe])
plot = hv.renderer("bokeh").get_plot(dmap)
fig = PosteriorFigure()
# the same number of updates each, one of each in turn (equal_timing: the benchmarks' one timing helper)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import equal_timing
times = equal_timing.alternate({
    "holoviews DynamicMap update": equal_timing.local(lambda i: pipe.send(comps[i % 2])),
    "bokeh CDS update": equal_timing.local(lambda i: fig.update(ds.X[:, 0], ds.y, comps[i % 2], "y", Z)),
}, calls=20, warmup=3)
for name, ms in times.items():
    s = equal_timing.summary(ms)
    print("%s: median %.1f ms, min %.1f ms (%d calls)" % (name, s["median"], s["min"], s["n"]))
