"""gpexplorer.sparse.joint_fit: fits from one start, traces for replay, progress and abort."""

import numpy as np
import pytest

from gpexplorer import datasets, kernels, models
from gpexplorer.sparse.comparison import ParameterSet
from gpexplorer.sparse.joint_fit import fit_all


@pytest.fixture(scope="module")
def data():
    return datasets.load("snelson100")


def _start(ds, M=8):
    return ParameterSet(kernels.SquaredExponential(1.0, 0.5), 0.09, ds.X[:: ds.n // M][:M].copy())


def test_each_fit_matches_a_direct_fit_and_starts_its_trace_at_the_start(data):
    start = _start(data)
    out = fit_all(data, start, ["fitc", "vfe"], max_iter=60)
    assert list(out) == ["exact", "fitc", "vfe"]
    for name in ("fitc", "vfe"):
        m = models.SparseGPR(data.X, data.y, kernels.SquaredExponential(1.0, 0.5), Z=start.Z.copy(),
                             approximation=name, noise_variance=0.09)
        m.fit(max_iter=60)
        o = out[name]
        assert o.log_evidence[-1] == pytest.approx(m.log_marginal_likelihood(), rel=1e-9) or \
            max(o.log_evidence) == pytest.approx(m.log_marginal_likelihood(), rel=1e-9)
        np.testing.assert_allclose(o.trace[0].Z, start.Z)
        assert o.trace[0].noise_variance == pytest.approx(0.09)
        assert len(o.trace) == len(o.log_evidence) == len(o.terms) == o.n_iter + 1
        np.testing.assert_allclose(o.final.Z, m.Z, rtol=1e-8)
    assert out["exact"].final.Z is None


def test_frozen_groups_stay_fixed_and_vfe_can_start_from_fitc(data):
    start = _start(data)
    out = fit_all(data, start, ["vfe"], fixed=("Z", "noise_variance"), max_iter=30, vfe_from_fitc=True)
    assert list(out) == ["exact", "fitc", "vfe"]  # FITC is fitted first to start VFE
    np.testing.assert_allclose(out["fitc"].final.Z, start.Z)
    assert out["vfe"].final.noise_variance == pytest.approx(0.09)
    assert out["vfe"].trace[0].kernel.lengthscale == pytest.approx(out["fitc"].final.kernel.lengthscale)


def test_progress_is_reported_and_an_exception_aborts(data):
    seen = []
    fit_all(data, _start(data), ["vfe"], max_iter=20, report=lambda f, m: seen.append(f))
    assert seen[-1] == 1.0 and all(0 <= a <= b <= 1 for a, b in zip(seen, seen[1:]))

    class Stop(Exception):
        pass

    def stop(fraction, message):
        if fraction > 0.2:
            raise Stop

    with pytest.raises(Stop):
        fit_all(data, _start(data), ["vfe"], max_iter=50, report=stop)
