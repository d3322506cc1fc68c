"""Issue 24, defects 7, 8 and 9: one validation layer at the model boundary
(:mod:`gpexplorer.validation`), messages that name the argument.

Each test here failed before the layer (the inputs gave numpy's or scipy's messages, a NaN, an
AttributeError, a MemoryError or were silently accepted). The inputs that crashed the interpreter
(defect 1) are tested in a child process in ``tests/fuzz/test_fuzz_models.py``.
"""

import time

import numpy as np
import pytest
from fuzz.child import assert_clean_exit

from gpexplorer import validation
from gpexplorer.inducing import Frequency, InducingPoints, Multiscale, SumOfDeltas, TimeFrequency
from gpexplorer.kernels import SquaredExponential
from gpexplorer.linearized.gp import LinearizedGP
from gpexplorer.linearized.kitchen_sinks import LinearizedKitchenSinks
from gpexplorer.sparse.regression import SparseGPR
from gpexplorer.variational.mixture import MixtureOfDiagonalGaussians
from gpexplorer.variational.savigp import SparseVariationalGP

X = np.linspace(0, 5, 30)[:, None]
Y = np.sin(X[:, 0])


def svgp(**kw):
    args = dict(X=X, Y=Y, kernel=SquaredExponential(), Z=5, likelihood="gaussian")
    args.update(kw)
    return SparseVariationalGP(**args)


# defect 7: SparseVariationalGP ------------------------------------------------------------------
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_svgp_non_finite_X_is_refused_naming_X(bad):
    with pytest.raises(ValueError, match=r"^X contains 6 NaN or infinite"):
        svgp(X=np.where(X > 4, bad, X))


def test_svgp_predictions_refuse_nan_Xnew():
    m = svgp()
    for call in (m.predict_f, m.predict_y, m.predict_f_quantiles, m.predict_components):
        with pytest.raises(ValueError, match="Xnew contains NaN"):
            call(np.array([[0.5], [np.nan]]))


def test_svgp_predict_y_on_empty_Xnew_is_a_clear_error():
    with pytest.raises(ValueError, match=r"Xnew must have shape \(N\*, 1\) with N\* >= 1"):
        svgp().predict_y(np.zeros((0, 1)))


def test_svgp_huge_Y_is_refused_naming_Y():
    with pytest.raises(ValueError, match=r"^Y has values up to 1e\+300"):
        svgp(Y=Y * 1e300)


def test_svgp_poisson_offset_out_of_range_is_refused():
    # refused by the likelihood's own bound on the offset, or else by the model's check that
    # log p(y | f) is finite at the prior mean; either names the offset
    with pytest.raises(ValueError, match=r"offset"):
        svgp(Y=np.ones(30), likelihood="poisson", likelihood_options={"offset": 1e300})


def test_svgp_huge_kernel_variance_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"^kernel0\.variance has values up to 1e\+300"):
        svgp(kernel=SquaredExponential(variance=1e300))
    m = svgp()
    with pytest.raises(ValueError, match=r"^kernel0\.variance"):
        m.set_parameters(**{"kernel0.variance": 1e300})
    assert m.parameters["kernel0.variance"] == 1.0


@pytest.mark.parametrize("Z", [10 ** 9, 10 ** 6])
def test_svgp_too_many_inducing_variables_is_refused_before_allocation(Z):
    with pytest.raises(ValueError, match=r"^Z = .* inducing variables .* above the cap of 2 GiB"):
        svgp(Z=Z)


def test_svgp_work_arrays_are_checked_against_the_cap():
    """In a child process: without the check this allocates gigabytes."""
    out = assert_clean_exit("""
        import numpy as np
        from gpexplorer.kernels import SquaredExponential
        from gpexplorer.variational.savigp import SparseVariationalGP
        X = np.linspace(0, 5, 30)[:, None]
        try:
            SparseVariationalGP(X, np.sin(X[:, 0]), SquaredExponential(), np.linspace(0, 5, 20_000), "gaussian")
        except ValueError as err:
            print(err)
        """, timeout=120)
    assert "Z with M = 20,000" in out and "above the cap of 2 GiB" in out


@pytest.mark.parametrize("seed, error", [(-1, ValueError), ("abc", TypeError), (1.5, TypeError), (True, TypeError)])
def test_svgp_bad_seed_is_refused_naming_seed(seed, error):
    with pytest.raises(error, match=r"^seed must be"):
        svgp(seed=seed)
    with pytest.raises(error, match=r"^seed must be"):
        svgp().fit(max_iter=1, seed=seed)


@pytest.mark.parametrize("n_points", [0, -3, 2.5, 10 ** 6])
def test_svgp_bad_n_points_is_refused(n_points):
    with pytest.raises(ValueError, match=r"^n_points must be a positive integer"):
        svgp(n_points=n_points)
    with pytest.raises(ValueError, match=r"^n_points must be a positive integer"):
        svgp().predict_y(X[:3], n_points=n_points)


@pytest.mark.parametrize("tol", [np.nan, -1, 0.0, np.inf, "small"])
def test_svgp_fit_refuses_a_bad_tol(tol):
    m = svgp()
    before = m.parameters
    with pytest.raises(ValueError, match=r"^tol must be a positive"):
        m.fit(max_iter=2, tol=tol)
    assert m.fit_result is None
    np.testing.assert_array_equal(m.parameters["posterior"], before["posterior"])


def test_svgp_valid_inputs_still_fit_and_predict_finitely():
    m = svgp(seed=3, n_points=20)
    m.fit(max_iter=5, tol=1e-9, seed=1)
    for out in (*m.predict_f(X[:4]), *m.predict_y(X[:4], n_points=10, seed=2)):
        assert np.all(np.isfinite(out))


# defect 7: the same layer in the other models ----------------------------------------------------
def test_sparse_gpr_shares_the_layer():
    with pytest.raises(ValueError, match=r"^X has values up to 5e\+200"):
        SparseGPR(X * 1e200, Y, SquaredExponential(), Z=X[:5])  # Z=5 would place (in a child: fuzz suite)
    with pytest.raises(ValueError, match=r"^Z = 1,000,000,000 inducing variables"):
        SparseGPR(X, Y, SquaredExponential(), Z=10 ** 9)
    with pytest.raises(ValueError, match=r"^seed must be a non-negative"):
        SparseGPR(X, Y, SquaredExponential(), Z=5, seed=-1)
    m = SparseGPR(X, Y, SquaredExponential(), Z=5)
    for tol in (np.nan, -1):
        with pytest.raises(ValueError, match=r"^tol must be a positive"):
            m.fit(max_iter=2, tol=tol)
    with pytest.raises(ValueError, match=r"^max_iter must be a non-negative integer"):
        m.fit(max_iter=2.5)
    with pytest.raises(ValueError, match=r"^Xnew has values up to 1e\+300"):
        m.predict_f(np.array([[1e300]]))


def test_linearized_models_share_the_layer():
    with pytest.raises(ValueError, match=r"^X has values up to 5e\+300"):
        LinearizedGP(X * 1e300, Y)
    with pytest.raises(ValueError, match=r"^X has values up to 5e\+300"):
        LinearizedKitchenSinks(X * 1e300, Y, forward="identity", n_features=10)
    with pytest.raises(ValueError, match=r"^seed must be a non-negative"):
        LinearizedKitchenSinks(X, Y, forward="identity", n_features=10, seed=-1)
    with pytest.raises(ValueError, match=r"^n_features must be a positive integer"):
        LinearizedKitchenSinks(X, Y, forward="identity", n_features=0)
    with pytest.raises(TypeError, match=r"^seed must be"):
        LinearizedGP(X, Y).fit(max_iter=2, restarts=1, seed="abc")


def test_validation_options_name_the_argument():
    assert validation.count("max_iter", 3.0, 0) == 3
    assert validation.seed(np.int64(4)) == 4
    gen = np.random.default_rng(0)
    assert validation.seed(gen) is gen
    assert validation.tolerance("tol", None) is None
    for bad in (True, "3", None):
        with pytest.raises(ValueError, match="^max_iter"):
            validation.count("max_iter", bad, 0)
    with pytest.raises(ValueError, match="^jitter"):
        validation.jitter(-1e-6)


# defect 8: a cap on the mixture's components -----------------------------------------------------
@pytest.mark.parametrize("K", [101, 1000, 10 ** 6, 0, 2.5])
def test_mixture_components_are_capped_with_a_message(K):
    with pytest.raises(ValueError, match=r"number of mixture components .* positive integer, at most 100 .* O\(K\^2\)"):
        svgp(posterior=("mog", K))
    with pytest.raises(ValueError, match=r"number of mixture components"):
        MixtureOfDiagonalGaussians(5, 1, K=K)


def test_the_largest_mixture_allowed_evaluates_in_well_under_a_second():
    m = svgp(posterior=("mog", validation.MAX_COMPONENTS))
    m.elbo()  # warm
    t0 = time.perf_counter()
    value = m.elbo()
    assert np.isfinite(value)
    assert time.perf_counter() - t0 < 1.0


# defect 9: inter-domain features at absurd scales ------------------------------------------------
MU = np.linspace(0, 5, 4)[:, None]
FEATURE_CASES = [
    (lambda: Multiscale(MU * 1e300, 0.5), r"^Multiscale\.mu has values up to 5e\+300"),
    (lambda: Multiscale(MU, 1e300), r"^Multiscale\.delta has values up to 1e\+300"),
    (lambda: Frequency(MU * 1e300, 0.3, 1.0), r"^Frequency\.omega has values up to 5e\+300.*angular frequencies"),
    (lambda: Frequency(MU, 1e300, 1.0), r"^Frequency\.omega0 has values up to 1e\+300.*phases"),
    (lambda: Frequency(MU, 0.3, 1e300), r"^Frequency\.delta has values up to 1e\+300"),
    (lambda: TimeFrequency(MU, MU * 1e300), r"^TimeFrequency\.omega has values"),
    (lambda: TimeFrequency(MU, MU, 1e300), r"^TimeFrequency\.omega0 has values"),
    (lambda: TimeFrequency(MU * 1e18, MU), r"^TimeFrequency\.mu and TimeFrequency\.omega give a phase"),
    (lambda: SumOfDeltas(np.c_[MU, MU + 0.3], np.c_[np.ones(4), np.full(4, 1e300)]), r"^SumOfDeltas\.weights"),
    (lambda: SumOfDeltas(np.c_[MU, MU + 0.3], np.c_[np.full(4, 1e-200), np.ones(4)]), r"^SumOfDeltas\.w has"),
    (lambda: SumOfDeltas(np.c_[MU, MU + 0.3] * 1e300), r"^SumOfDeltas\.Z has values"),
    (lambda: InducingPoints(MU * 1e300), r"^InducingPoints\.Z has values"),
]


@pytest.mark.parametrize("make, match", FEATURE_CASES, ids=lambda v: v if isinstance(v, str) else "")
def test_absurd_feature_parameters_are_refused_naming_the_parameter(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_set_parameters_checks_feature_parameters_too():
    ms = Multiscale(MU, 0.5)
    with pytest.raises(ValueError, match=r"^Multiscale\.mu has values up to"):
        ms.set_parameters(mu=MU * 1e300)
    np.testing.assert_array_equal(ms.mu, MU)
    fr = Frequency(MU, 0.3, 1.0)
    with pytest.raises(ValueError, match=r"^Frequency\.omega0"):
        fr.set_parameters(omega0=np.full(4, 1e20))
    tf = TimeFrequency(MU, MU)
    with pytest.raises(ValueError, match=r"phase omega \. mu"):
        tf.set_parameters(mu=MU * 1e16)


@pytest.mark.parametrize("make", [lambda: Multiscale(MU * 1e99, 0.5), lambda: Frequency(MU * 1e14, 1e14, 1.0),
                                  lambda: TimeFrequency(MU, MU * 1e13, 1e14, 1e49),
                                  lambda: SumOfDeltas(np.c_[MU, MU + 0.3], np.c_[np.ones(4), np.full(4, 1e99)])])
def test_features_at_the_limits_give_finite_objectives_and_gradients(make):
    m = SparseGPR(X, Y, SquaredExponential(), make())
    value, grads, _ = m.objective_and_gradient()
    assert np.isfinite(value)
    for g in grads.values():
        assert np.all(np.isfinite(g))


def test_kmeans_says_when_it_falls_back_to_a_spread():
    """Too few distinct points for k-means: the spread is used and a PlacementWarning says why."""
    import warnings

    from gpexplorer.inducing.placement import PlacementWarning, kmeans, spread

    X = np.repeat(np.array([[0.0], [1.0], [2.0]]), 5, axis=0)
    with pytest.warns(PlacementWarning, match="fewer than 4 distinct points"):
        Z = kmeans(X, 4, 0)
    assert np.array_equal(Z, spread(X, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("error", PlacementWarning)  # ordinary data: no note
        kmeans(np.linspace(0, 1, 30)[:, None], 4, 0)
