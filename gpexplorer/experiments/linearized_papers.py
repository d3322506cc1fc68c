"""Set-ups and runners of the linearised-GP experiments (EGP paper section 4, EKS paper section 7).

* :func:`gpexplorer.datasets.toy_inversion` (the data) / :func:`cv_folds` -- the toy inversion
  problems of EGP paper section 4.1 (Table 1): latent f drawn from a zero-mean GP (Matern 5/2, amplitude 0.8 i.e.
  variance 0.64, lengthscale 0.6) at 1000 points evenly spaced on [-2 pi, 2 pi],
  y = g(f) + N(0, 0.2^2); "5-fold cross validation to train (200 points) and test (800
  points)": the 1000 indices are permuted into five blocks of 200 and fold k trains on block k
  and tests on the other 800 (the original ``experiments/datagen.py`` does exactly this: it
  swaps the train/test roles of a 5-fold split). The EKS paper (section 7.1) repeats the set-up
  with a squared-exponential latent GP; ``latent_kernel="se"`` gives that variant.
* :func:`run_toy` -- EGP / UGP (:class:`gpexplorer.linearized.gp.LinearizedGP`) and EKS / UKS
  (:class:`gpexplorer.linearized.kitchen_sinks.LinearizedKitchenSinks`) on those folds: NLPD and SMSE of
  f* and SMSE of y* (:mod:`gpexplorer.metrics`), for any list of feature counts D (EKS fig. 1).
  GP methods use the Matern 5/2 kernel (EGP paper section 4.1: "All GP methods use Matern 5/2");
  the random features follow the latent kernel (EKS section 3 and 7.1: squared-exponential
  features, eq. 6, for its squared-exponential latents; Matern 5/2 features on the EGP paper's data).
  D counts columns of Phi (cos and sin of D/2 frequencies), which is what the EKS table's "D = 200"
  means: eq. 6 turns D frequencies into a 2D-dimensional phi, and the authors' public Matlab code
  (github.com/ebonilla/gp-kitchen-sinks: getRandomRBF returns [cos, sin] of its D frequencies,
  mteugpEvaluateResultsToyData writes the table from the D = 100 run) used 100 frequencies.
* :func:`run_usps` -- USPS '3' vs '5' with the logistic forward model (EGP paper section 4.2,
  Table 2; EKS section 7.2, fig. 2): error rate and NLP on the 773 test images.
* :func:`run_seismic` -- EKS / UKS joint inversion of a synthetic four-layer survey
  (:mod:`gpexplorer.datasets.seismic`; EKS section 7.4, forward model eq. 38).

All runners return :class:`ResultRow` lists (per-fold values, fit times); the paper's numbers
and the table layout live in :mod:`gpexplorer.experiments.reproduce`.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from gpexplorer.linearized.methods import METHODS as LINEARIZED_METHODS
from gpexplorer import kernels, metrics
from gpexplorer.datasets.toy_inversion import TOY_N_POINTS, ToyData, toy_inversion
from gpexplorer.linalg import JitterWarning
from gpexplorer.linearized.gp import PAPER_BOUNDS  # re-exported: EGP paper section 4.1's box

__all__ = ["TABLE1_FORWARDS", "METHODS", "PAPER_BOUNDS", "USPS_BOUNDS", "ResultRow",
           "cv_folds", "make_model", "fit_model", "predict_moments", "toy_fold", "run_toy", "run_usps", "run_seismic"]

#: forward models of EGP paper Table 1, plus the non-differentiable one of its Figure 1
TABLE1_FORWARDS = ("identity", "poly3", "exp", "sin", "tanh2", "sign_cubic")
#: the method table keyed by the papers' names ("EGP", ...): a view of the one in
#: :mod:`gpexplorer.linearized.methods` (family "gp" or "ks", linearisation)
METHODS = {spec.label: spec for spec in LINEARIZED_METHODS.values()}
#: EGP paper section 4.2 / original uspsbclass.py: sigma_se and l_se bounded at 0.1, noise std at 1e-7
#: (applied with ``model.set_bounds(**USPS_BOUNDS)``; the toy problems' box is PAPER_BOUNDS, section 4.1)
USPS_BOUNDS = {"variance": (0.01, 1e8), "lengthscale": (0.1, 1e4), "noise_variance": (1e-14, 1e2)}
TOY_N_SPLITS = 5


@dataclass(eq=False)
class ResultRow:
    """Per-fold (or per-run) results of one method on one problem.

    ``metrics`` maps a metric name to its per-fold values; ``stderr`` optionally gives a
    standard error for single-split experiments (USPS); ``fit_seconds`` the per-fold wall time of
    construction + fit; ``note`` explains a row without numbers (e.g. Taylor refused a
    non-differentiable model).
    """

    experiment: str
    method: str
    forward: str
    n_features: int | None = None
    metrics: dict = field(default_factory=dict)
    stderr: dict = field(default_factory=dict)
    fit_seconds: np.ndarray = field(default_factory=lambda: np.empty(0))
    note: str = ""
    extra: dict = field(default_factory=dict)

    def mean(self, name):
        values = self.metrics.get(name)
        return float(np.mean(values)) if values is not None and len(values) else float("nan")

    def std(self, name):
        values = self.metrics.get(name)
        return float(np.std(values)) if values is not None and len(values) else float("nan")


def cv_folds(n_points=TOY_N_POINTS, n_splits=TOY_N_SPLITS, seed=0):
    """``n_splits`` folds of a random permutation: fold k trains on block k, tests on the rest.

    With 1000 points and 5 splits: 200 training / 800 test points per fold, training blocks
    pairwise disjoint (EGP paper section 4.1). Returns a list of (train, test) index arrays.
    """
    if isinstance(n_splits, bool) or not isinstance(n_splits, (int, np.integer)) or not 2 <= n_splits <= n_points:
        raise ValueError(f"n_splits must be an integer in [2, n_points]; got {n_splits!r}")
    perm = np.random.default_rng((int(seed), 0x5F01D)).permutation(int(n_points))
    blocks = np.array_split(perm, int(n_splits))
    return [(np.sort(blocks[k]), np.sort(np.concatenate(blocks[:k] + blocks[k + 1:])))
            for k in range(int(n_splits))]


def make_model(method, X, y, forward, *, n_features=200, kernel="matern52", seed=0, **options):
    """An unfitted model: EGP/UGP as LinearizedGP, EKS/UKS as LinearizedKitchenSinks.

    Hyperparameters start at 1.0 (kernel variance, lengthscale, noise variance) as in EGP paper
    section 4.1 unless ``options`` override them (``variance``, ``lengthscale``,
    ``noise_variance``, plus any other keyword of the model class).
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {sorted(METHODS)}; got {method!r}")
    family, linearization = METHODS[method].family, METHODS[method].linearization
    variance = options.pop("variance", 1.0)
    lengthscale = options.pop("lengthscale", 1.0)
    noise_variance = options.pop("noise_variance", 1.0)
    if family == "gp":
        from gpexplorer.linearized.gp import LinearizedGP

        kern_cls = {"matern52": kernels.Matern52, "se": kernels.SquaredExponential}[kernel]
        return LinearizedGP(X, y, forward=forward, linearization=linearization,
                            kernel=kern_cls(variance=variance, lengthscale=lengthscale),
                            noise_variance=noise_variance, **options)
    from gpexplorer.linearized.kitchen_sinks import LinearizedKitchenSinks

    return LinearizedKitchenSinks(X, y, forward=forward, linearization=linearization,
                                  n_features=n_features, kernel=kernel, lengthscale=lengthscale,
                                  weight_variance=variance, noise_variance=noise_variance, seed=seed,
                                  **options)


def fit_model(model, method, bounds=PAPER_BOUNDS, fixed=(), gp_search=None):
    """Hyperparameter learning (EGP paper section 3.2 / EKS section 4.4); GP models are given the
    box ``bounds`` (``model.set_bounds(**bounds)``) and, if given, the search ``gp_search`` (one of
    :data:`gpexplorer.linearized.gp.FIT_METHODS`)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JitterWarning)
        if METHODS[method].family == "gp":
            search = {} if gp_search is None else {"method": gp_search}
            return model.set_bounds(**bounds).fit(fixed=fixed, **search)
        return model.fit(fixed=fixed)


def predict_moments(model, method, Xs, seed=0):
    """(mean f*, var f*, mean y*) as 1-D arrays; y* by quadrature (GP, EGP paper eq. 39) or Monte
    Carlo (kitchen sinks, EKS eq. 37)."""
    mf, vf = model.predict_f(Xs)
    if METHODS[method].family == "gp":
        my, _ = model.predict_y(Xs, method="quadrature")
    else:
        my, _ = model.predict_y(Xs, method="monte_carlo", num_samples=4000, seed=seed)
    return np.ravel(mf), np.ravel(vf), np.ravel(my)


def toy_fold(method, data: ToyData, train, test, n_features=200, seed=0, feature_kernel=None):
    """Fit ``method`` on one fold; returns ({nlpd_f, smse_f, smse_y, smse_g}, fit seconds).

    ``feature_kernel`` (EKS/UKS): kernel of the random features, default the data's latent kernel;
    EGP/UGP always use Matern 5/2 (EGP paper section 4.1).

    SMSE y* scores the predicted observation mean against the noisy test targets (EGP paper
    Table 1, as its experiment script does); SMSE g* against the noise-free g(f*) (EKS paper
    Table 1's "SMSE-g*": for g(f) = f it equals SMSE f* there, which only the noise-free target
    explains).
    """
    t0 = time.perf_counter()
    kernel = "matern52" if METHODS[method].family == "gp" else (feature_kernel or data.latent_kernel)
    model = make_model(method, data.X[train], data.y[train], data.forward, n_features=n_features,
                       kernel=kernel, seed=seed)
    fit_model(model, method)
    seconds = time.perf_counter() - t0
    mf, vf, my = predict_moments(model, method, data.X[test], seed=seed)
    ft, yt = data.f[test], data.y[test]
    gt = model.forward.value(ft[:, None])[:, 0]
    return {"nlpd_f": metrics.nlpd(ft, mf, np.maximum(vf, 1e-300)), "smse_f": metrics.smse(ft, mf),
            "smse_y": metrics.smse(yt, my), "smse_g": metrics.smse(gt, my)}, seconds


def _refusal(method, forward):
    """Taylor linearisation must refuse a non-differentiable g; return its message (or '')."""
    from gpexplorer.likelihoods.forward_models import get_forward_model

    if METHODS[method].linearization != "taylor" or get_forward_model(forward).differentiable:
        return ""
    try:
        make_model(method, np.zeros((2, 1)), np.array([0.0, 1.0]), forward)
    except ValueError as err:
        return f"refused: {err}"
    raise AssertionError(f"{method} accepted the non-differentiable forward model {forward!r}")


def run_toy(methods=("EGP", "UGP", "EKS", "UKS"), forwards=TABLE1_FORWARDS, n_folds=TOY_N_SPLITS, *,
            feature_counts=(200,), seed=0, latent_kernel="matern52", n_draws=1, progress=None,
            feature_kernel=None):
    """EGP Table 1 / EKS Table 1 and fig. 1: every (method, forward, D) on the first ``n_folds`` folds.

    ``feature_kernel``: kernel of the EKS/UKS random features (default: ``latent_kernel``).

    ``feature_counts`` applies to EKS/UKS only (EGP/UGP rows have ``n_features=None``). Taylor
    methods with a non-differentiable model give a row with the refusal message and no numbers.
    ``n_draws`` > 1 repeats everything on independent latent draws (data and folds seeded
    seed, seed + 1, ...): a row's ``metrics`` then pool all (draw, fold) values and
    ``extra["draw_means"]`` holds each draw's fold average, whose spread is the draw-to-draw
    variation that one paper draw cannot show. ``progress(text)`` is called after each row.
    """
    if not 1 <= int(n_folds) <= TOY_N_SPLITS:
        raise ValueError(f"n_folds must be between 1 and {TOY_N_SPLITS} (the paper's 200/800 splits); got {n_folds}")
    if isinstance(n_draws, bool) or not isinstance(n_draws, (int, np.integer)) or n_draws < 1:
        raise ValueError(f"n_draws must be a positive integer; got {n_draws!r}")
    unknown = set(methods) - set(METHODS)
    if unknown:
        raise ValueError(f"unknown method(s) {sorted(unknown)}; choose from {sorted(METHODS)}")
    draws = [seed + d for d in range(int(n_draws))]
    rows = []
    for forward in forwards:
        data = {s: toy_inversion(forward, seed=s, latent_kernel=latent_kernel) for s in draws}
        folds = {s: cv_folds(seed=s)[:int(n_folds)] for s in draws}
        for method in methods:
            counts = (None,) if METHODS[method].family == "gp" else tuple(feature_counts)
            for D in counts:
                row = ResultRow("toy", method, data[seed].forward, D,
                                extra={"latent_kernel": latent_kernel, "draws": draws,
                                       "feature_kernel": None if D is None else (feature_kernel or latent_kernel)})
                row.note = _refusal(method, forward)
                if not row.note:
                    values, seconds, draw_means = {}, [], {}
                    for s in draws:
                        per_draw = {}
                        for k, (train, test) in enumerate(folds[s]):
                            fold_metrics, dt = toy_fold(method, data[s], train, test, n_features=D or 0,
                                                        seed=s + k, feature_kernel=feature_kernel)
                            for key, v in fold_metrics.items():
                                per_draw.setdefault(key, []).append(v)
                            seconds.append(dt)
                        for key, v in per_draw.items():
                            values.setdefault(key, []).extend(v)
                            draw_means.setdefault(key, []).append(float(np.mean(v)))
                    row.metrics = {k: np.array(v) for k, v in values.items()}
                    row.fit_seconds = np.array(seconds)
                    row.extra["draw_means"] = {k: np.array(v) for k, v in draw_means.items()}
                rows.append(row)
                if progress is not None:
                    progress(f"{method} {data[seed].forward} D={D}")
    return rows


#: EGP paper Table 2: learned log sigma_se and log l_se of the UGP and EGP on USPS 3-vs-5
USPS_PAPER_HYPERPARAMETERS = {"UGP": (1.5743, 1.5262), "EGP": (2.9134, 1.7872)}


def run_usps(methods=("EGP", "UGP", "EKS", "UKS"), feature_counts=(100, 200, 400, 800), learn=True,
             seed=0, progress=None):
    """USPS 3-vs-5 with g = logistic: error rate and NLP on the 773 test images (EGP Table 2, EKS fig. 2).

    Squared-exponential kernel, amplitude and lengthscale started at 1.0 and bounded below by
    0.1, noise variance started at its lower bound (1e-14 for EGP/UGP as in the paper; the
    kitchen sinks' search box starts at 1e-6). ``learn=False`` skips hyperparameter learning
    and uses the hyperparameters the paper reports in Table 2 (the EGP's for EKS, the UGP's for
    UKS) with noise variance 1e-6: the quick variant. ``stderr`` holds the standard error of each
    test-set average.
    """
    from gpexplorer import datasets

    ds = datasets.load("usps_3vs5")
    rows = []
    for method in methods:
        family = METHODS[method].family
        counts = (None,) if family == "gp" else tuple(feature_counts)
        paper_method = method if family == "gp" else {"EKS": "EGP", "UKS": "UGP"}[method]
        log_amp, log_len = USPS_PAPER_HYPERPARAMETERS[paper_method]
        for D in counts:
            if learn:
                start = {"variance": 1.0, "lengthscale": 1.0,
                         "noise_variance": 1e-14 if family == "gp" else 1e-6}
            else:
                start = {"variance": float(np.exp(2 * log_amp)), "lengthscale": float(np.exp(log_len)),
                         "noise_variance": 1e-6}
            t0 = time.perf_counter()
            model = make_model(method, ds.X, ds.y, "logistic", n_features=D or 0, kernel="se", seed=seed,
                               **start)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", JitterWarning)
                if learn:
                    # A derivative-free search, as in the paper. With the noise at its 1e-14 bound the
                    # EGP free energy keeps rising with the kernel variance (no maximum inside the box),
                    # so the learnt value is where the search stops: COBYLA and the default gradient
                    # search both reach variance ~ 25000 (NLP 0.22); the original package's BOBYQA
                    # stops at ~ 545 (NLP 0.106, tests/benchmarks/usps_original_linearizedgp.py).
                    fit_model(model, method, bounds=USPS_BOUNDS, gp_search="cobyla")
                else:
                    model.fit_posterior()
            seconds = time.perf_counter() - t0
            _, _, prob = predict_moments(model, method, ds.X_test, seed=seed)
            prob = np.clip(prob, 0.0, 1.0)
            wrong = ((prob > 0.5) != (ds.y_test > 0.5)).astype(float)
            loss = -np.log(np.clip(np.where(ds.y_test > 0.5, prob, 1.0 - prob), 1e-12, 1.0))
            n = len(ds.y_test)
            row = ResultRow("usps", method, "logistic", D,
                            metrics={"error_rate": np.array([metrics.error_rate(ds.y_test, prob)]),
                                     "nlp": np.array([metrics.nlp(ds.y_test, prob)])},
                            stderr={"error_rate": float(wrong.std() / np.sqrt(n)),
                                    "nlp": float(loss.std() / np.sqrt(n))},
                            fit_seconds=np.array([seconds]),
                            extra={"learned": bool(learn), "parameters": _parameters(model)})
            rows.append(row)
            if progress is not None:
                progress(f"{method} D={D}")
    return rows


def _parameters(model):
    params = dict(model.parameters)
    return {k: (np.asarray(v).tolist() if np.ndim(v) else float(v)) for k, v in params.items()}


def run_seismic(methods=("EKS", "UKS"), n_surveys=3, n_features=1000, seed=0, learn=False, progress=None):
    """EKS section 7.4 on synthetic surveys: infer depths and velocities of four layers.

    Each survey (seeds seed, seed + 1, ...) is inverted with the seismic forward model (eq. 38):
    prior means at the nominal depths/velocities and prior variances and SE lengthscale from the
    survey (the paper's "flat priors centred on average depths and velocities"), noise variance
    at the survey's. ``learn`` additionally fits the noise variances and the lengthscale (the
    prior variances stay fixed: the inversion is under-determined and they carry the geology);
    by default only the posterior is computed at those known settings.
    The paper does not give D for this experiment; with D = 200 the random-feature prior is a poor
    enough copy of the SE prior that the velocities come out worse than the prior mean (survey 0:
    0.23 km/s against 0.15), with D = 1000 they improve on it (0.13), hence the default.
    Metrics: RMSE of posterior-mean depths (km) and velocities (km/s) against the truth, the
    prior mean's RMSE for scale, 95% interval coverage with the paper's factorised variances
    (eq. 36) and with the unfactorised ("coupled") variances of the same linearised model, and the
    RMSE of the predicted noise-free reflection times (s).
    """
    from gpexplorer.datasets import seismic
    from gpexplorer.likelihoods.forward_models import get_forward_model

    rows = []
    for method in methods:
        if METHODS[method].family != "ks":
            raise ValueError(f"the seismic inversion is multi-task: use EKS or UKS, not {method}")
        values, seconds = {}, []
        for k in range(int(n_surveys)):
            survey = seismic.synthetic_survey(seed=seed + k)
            forward = get_forward_model("seismic", n_layers=survey.n_layers)
            t0 = time.perf_counter()
            model = make_model(method, survey.x, survey.observed, forward, n_features=n_features, kernel="se",
                               seed=seed + k, variance=survey.prior_variance,
                               lengthscale=survey.meta["lengthscale_km"], noise_variance=survey.noise_std ** 2,
                               prior_mean=survey.prior_mean)
            if learn:
                fit_model(model, method, fixed=("weight_variance",))
            else:
                model.fit_posterior()
            seconds.append(time.perf_counter() - t0)
            mean, var = model.predict_f(survey.x)
            errors = seismic.inversion_errors(survey, mean, var)
            coupled = seismic.inversion_errors(survey, mean, model.predict_f(survey.x, covariance="coupled")[1])
            for label in ("depth", "velocity"):
                errors[f"{label}_coverage95_coupled"] = coupled[f"{label}_coverage95"]
            times_mean, _ = model.predict_y(survey.x, method="unscented")
            errors["time_rmse"] = float(np.sqrt(np.mean((times_mean - survey.times) ** 2)))
            for key in ("depth_rmse", "velocity_rmse", "depth_prior_rmse", "velocity_prior_rmse",
                        "depth_coverage95", "velocity_coverage95", "depth_coverage95_coupled",
                        "velocity_coverage95_coupled", "time_rmse"):
                values.setdefault(key, []).append(errors[key])
        rows.append(ResultRow("seismic", method, "seismic", n_features,
                              metrics={k: np.array(v) for k, v in values.items()},
                              fit_seconds=np.array(seconds),
                              extra={"noise_std": survey.noise_std, "n_sites": survey.x.shape[0]}))
        if progress is not None:
            progress(f"{method} seismic")
    return rows
