"""Issue 27: property-based fuzzing of the random-feature bases and models (hypothesis; see
``conftest.py`` for the example budget). Each case builds a basis or a model from drawn arguments
(every registered basis and likelihood, absurd scales, NaN, bad options), fits it with a tiny
budget and predicts: a ValueError / TypeError naming an argument, or finite results."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from test_fuzz_models import check

from gpexplorer.likelihoods.pointwise import LIKELIHOODS
from gpexplorer.random_features import BASES, GeneralizedLinearModel, StandardLinearModel, basis

SCALES = [1.0, 1e-300, 1e-8, 1e8, 1e100, 1e120]
SPECIALS = [None, np.nan, np.inf]
HOSTILE = [1.0, 0.0, -1.0, 1e-300, 1e300, np.nan, np.inf, [1.0, 2.0], "abc", True, None]
ARGS = ("X", "y", "Y", "Xnew", "ynew", "basis", "n_features", "lengthscale", "mean_frequency", "columns", "seed",
        "input_dim", "weight_variance", "noise_variance", "likelihood", "n_components", "estimator", "num_samples",
        "max_iter", "batch_size", "learning_rate", "random_starts", "levels", "features", "labels", "counts",
        "trials", "latent")


def _data(scale, special, N, rng):
    X = rng.uniform(0, 3, size=(N, 2)) * scale
    if special is not None and N > 1:
        X[N // 2, 0] = special
    return X


@given(name=st.sampled_from(sorted(BASES)), n_features=st.sampled_from([2, 8, 7, 0, -2, 10 ** 12, True, 2.5]),
       lengthscale=st.sampled_from(HOSTILE), columns=st.sampled_from([None, [0], [1, 0], [2], [], "a"]),
       seed=st.sampled_from([0, -1, "abc", 2 ** 70]), scale=st.sampled_from(SCALES),
       special=st.sampled_from(SPECIALS))
def test_fuzz_every_basis(name, n_features, lengthscale, columns, seed, scale, special):
    rng = np.random.default_rng(0)
    X = _data(scale, special, 6, rng)
    b = check(ARGS, lambda: basis(name, 2, n_features, lengthscale=lengthscale, seed=seed, columns=columns))
    if b is None:
        return
    check(ARGS, lambda: b(X))
    check(ARGS, lambda: b.kernel_approximation(X))
    check(ARGS, lambda: b.kernel(X))
    check(ARGS, lambda: b.vjp(X, np.ones((6, b.n_features))))
    check(ARGS, lambda: b.set_parameters(**{k: lengthscale for k in b.parameters}))


@given(scale=st.sampled_from(SCALES), special=st.sampled_from(SPECIALS), N=st.integers(1, 10),
       weight_variance=st.sampled_from(HOSTILE), noise_variance=st.sampled_from(HOSTILE),
       y_scale=st.sampled_from([1.0, 1e-300, 1e100, 1e200]), random_starts=st.sampled_from([0, 2, -1]),
       xnew=st.sampled_from(["ok", "nan", "empty", "wide"]))
def test_fuzz_standard_linear_model(scale, special, N, weight_variance, noise_variance, y_scale, random_starts, xnew):
    rng = np.random.default_rng(N)
    X = _data(scale, special, N, rng)
    y = np.sin(np.arange(N, dtype=float)) * y_scale
    m = check(ARGS, lambda: StandardLinearModel(X, y, basis("rbf", 2, 10) + basis("linear", 2),
                                                weight_variance=weight_variance, noise_variance=noise_variance))
    if m is None:
        return
    check(ARGS, lambda: m.log_evidence())
    check(ARGS, lambda: m.fit(max_iter=3, random_starts=random_starts, seed=0).objective)
    Xn = {"ok": X[:2], "nan": np.full((2, 2), np.nan), "empty": np.zeros((0, 2)), "wide": np.zeros((2, 3))}[xnew]
    check(ARGS, lambda: m.predict_y(Xn))
    check(ARGS, lambda: m.predict_log_density(Xn, np.zeros(len(Xn))))


@given(scale=st.sampled_from(SCALES), special=st.sampled_from(SPECIALS), N=st.integers(1, 10),
       lik=st.sampled_from(sorted(LIKELIHOODS) + ["nope"]), K=st.sampled_from([1, 3, 0, 10 ** 7, "a"]),
       estimator=st.sampled_from(["quadrature", "monte_carlo", "magic"]), num_samples=st.sampled_from([1, 5, 0]),
       batch_size=st.sampled_from([None, 1, 3, 0, 10 ** 6]), learning_rate=st.sampled_from([0.01, 0.0, np.nan, 1e6]),
       weight_variance=st.sampled_from([1.0, 1e-300, 1e300, np.nan]))
def test_fuzz_generalized_linear_model(scale, special, N, lik, K, estimator, num_samples, batch_size, learning_rate,
                                       weight_variance):
    rng = np.random.default_rng(N)
    X = _data(scale, special, N, rng)
    y = (np.arange(N) % 2).astype(float)
    options = {"trials": 3} if lik == "binomial" else None
    m = check(ARGS, lambda: GeneralizedLinearModel(X, y, basis("rbf", 2, 8), lik, K, estimator=estimator,
                                                   num_samples=num_samples, weight_variance=weight_variance,
                                                   likelihood_options=options))
    if m is None:
        return
    check(ARGS, lambda: m.bound())
    check(ARGS, lambda: m.fit(max_iter=3, batch_size=batch_size, learning_rate=learning_rate, seed=0).objective)
    check(ARGS, lambda: m.predict_y(X[:2]))
    check(ARGS, lambda: m.predict_log_density(X[:2], y[:2]))
