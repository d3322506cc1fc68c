"""Evaluate the exact GP and several sparse approximations side by side (thesis ch. 3).

``compare`` takes one :class:`ParameterSet` per approximation (kernel hyperparameters, noise
variance, inducing inputs Z) and returns, for each, what the sparse-regression lab shows:
the log evidence (or VFE bound) with its terms in the form of eq. 3.1, the exact log marginal
likelihood and Titsias' upper bound (eq. 2.38) at the *same* parameters (the bound sandwich),
predictions on a grid, and pathology badges (thesis §3.2: noise collapse, clumping, an evidence
above the exact log p(y) or above the upper bound, escalated jitter). Plain numpy; no plotting.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from gpexplorer import covariances
from gpexplorer.formatting import format_correlation, format_number
from gpexplorer.inducing import InducingFeature, InducingPoints
from gpexplorer.linalg import CholeskyError, JitterWarning
from gpexplorer.sparse import diagnostics
from gpexplorer.sparse.feature_position import DUPLICATE_CORRELATION, near_duplicates
from gpexplorer.sparse import objectives
from gpexplorer.sparse import regression as models

#: the exact GP and every sparse approximation, in the order the lab shows them
APPROXIMATIONS = ("exact",) + objectives.APPROXIMATIONS
LABELS = {"exact": "Exact GP", "sor": "SoR", "dtc": "DTC", "fitc": "FITC", "vfe": "VFE"}
TERMS = ("complexity", "data_fit", "trace")
BASE_JITTER = 1e-6
CLUMP_TOL = 1e-2  # lengthscales; near-duplicate inducing inputs
ILL_CONDITIONED = 1e10
NOISE_COLLAPSE_RATIO = 0.5
#: an evidence above the exact log p(y) (or an upper bound) by more than this, relative to
#: max(1, |the reference|), overestimates; less is round-off (and jitter, with Z at the data)
OVERESTIMATE_TOL = 1e-5
#: every badge kind: these from :func:`badges`, "not-converged" from ``joint_fit.convergence_badges``.
#: ``above-upper-bound`` implies ``above-exact``; an approximation gets one of the two, the stronger
BADGE_KINDS = ("failure", "jitter", "clumping", "near-duplicate", "ill-conditioned", "above-exact",
               "above-upper-bound", "noise-collapse", "not-converged")


@dataclass
class ParameterSet:
    """Kernel (hyperparameters inside), noise variance and inducing feature (None for exact).

    ``inducing`` may be given as an array of inducing inputs [M, D] (or [M] in 1-D): it is held
    as :class:`gpexplorer.inducing.InducingPoints`. ``Z`` reads the feature's locations. An
    array that is not valid inducing inputs (NaN, say) is kept as given, so that evaluating it
    reports the failure as a badge instead of raising here.
    """

    kernel: object
    noise_variance: float
    inducing: InducingFeature | None = None
    jitter: float = BASE_JITTER  # added to Kuu's diagonal (thesis 4.4.2: it decides what a near-pair does)

    def __post_init__(self):
        if self.inducing is not None and not isinstance(self.inducing, InducingFeature):
            Z = np.array(self.inducing, dtype=float)
            try:
                self.inducing = InducingPoints(Z if Z.ndim != 1 else Z[:, None])
            except ValueError:
                self.inducing = Z

    @property
    def Z(self):
        """[M, D] locations of the inducing feature (None for the exact GP)."""
        return self.inducing.locations if isinstance(self.inducing, InducingFeature) else self.inducing

    def copy(self) -> "ParameterSet":
        return ParameterSet(self.kernel.copy(), float(self.noise_variance),
                            None if self.inducing is None else self.inducing.copy(), float(self.jitter))

    @classmethod
    def from_model(cls, model) -> "ParameterSet":
        feature = getattr(model, "inducing", None)
        return cls(model.kernel.copy(), float(model.noise_variance), None if feature is None else feature.copy(),
                   float(getattr(model, "jitter", BASE_JITTER)))


@dataclass
class Badge:
    """A pathology worth pointing at, with a one-line explanation."""

    kind: str  # one of BADGE_KINDS
    approximation: str
    message: str


@dataclass
class ApproximationResult:
    name: str
    params: ParameterSet
    log_evidence: float = float("nan")  # log p(y), the evidence, or VFE's bound (= -F)
    terms: dict = field(default_factory=dict)  # of log p(y): -complexity, -data fit, -trace (eq. 3.1)
    exact_at_params: float = float("nan")
    upper_bound: float = float("nan")  # Titsias' bound at the same parameters (sparse only)
    tightened_upper_bound: float = float("nan")  # the same bound with Z optimised for it (§3.2.6)
    mean: np.ndarray | None = None  # of f at the prediction inputs
    var_f: np.ndarray | None = None
    jitter_used: float = 0.0
    clumped_pairs: int = 0
    duplicate_features: list = field(default_factory=list)  # (i, j, corr of u) above DUPLICATE_CORRELATION
    condition_number: float = float("nan")  # of Kuu + jitter I, the matrix factorised
    kuu_min_eigenvalue: float = float("nan")
    samples: np.ndarray | None = None  # [S, G'] draws of f at sample_inputs
    sample_inputs: np.ndarray | None = None  # [G', D] where the samples were drawn (their own grid)
    error: str | None = None

    @property
    def tightest_upper_bound(self):
        """The lower of the two upper bounds on log p(y) computed so far (inf if none)."""
        return min((u for u in (self.upper_bound, self.tightened_upper_bound) if np.isfinite(u)), default=np.inf)

    @property
    def var_y(self):
        return None if self.var_f is None else self.var_f + self.params.noise_variance


@dataclass
class Comparison:
    results: dict  # name -> ApproximationResult, in APPROXIMATIONS order
    inputs: np.ndarray  # where mean/var are given: a 1-D grid or the test inputs
    badges: list


def _lengthscale(kernel):
    return np.asarray(getattr(kernel, "lengthscale", 1.0), dtype=float)


def build_model(ds, name, p: ParameterSet):
    if name == "exact":
        return models.ExactGPR(ds.X, ds.y, kernel=p.kernel.copy(), noise_variance=p.noise_variance)
    return models.SparseGPR(ds.X, ds.y, kernel=p.kernel.copy(), Z=p.inducing.copy(), approximation=name,
                            noise_variance=p.noise_variance, jitter=p.jitter)


def _log_terms(terms):
    """Terms of log p(y) = -F, without the constant (eq. 3.1)."""
    return {t: -float(terms.get(t, 0.0)) for t in TERMS}


def _hyperparameter_key(p: ParameterSet):
    # exact bytes: a rounded repr would let nearby hyperparameters share one cached value
    return tuple((n, np.asarray(v, dtype=float).tobytes()) for n, v in p.kernel.parameters.items()) + \
        (float(p.noise_variance),)


class _ExactCache:
    """Exact log p(y) is O(N^3); approximations sharing hyperparameters share one evaluation."""

    def __init__(self, ds):
        self.ds, self.values = ds, {}

    def store(self, p: ParameterSet, value):
        self.values[_hyperparameter_key(p)] = value

    def __call__(self, p: ParameterSet):
        key = _hyperparameter_key(p)
        if key not in self.values:
            self.values[key] = build_model(self.ds, "exact", p).log_marginal_likelihood()
        return self.values[key]


def _samples(model, inputs, num_samples, seed):
    mean, cov = model.predict_f(inputs, full_cov=True)
    cov = 0.5 * (cov + cov.T) + 1e-8 * np.eye(len(mean))
    rng = np.random.default_rng(seed)
    # eigh tolerates the rank deficiency of SoR's/DTC's predictive covariance, unlike Cholesky
    w, V = np.linalg.eigh(cov)
    root = V * np.sqrt(np.maximum(w, 0.0))
    return mean + rng.standard_normal((num_samples, len(mean))) @ root.T


def evaluate(ds, name, p: ParameterSet, inputs, exact_cache=None, num_samples=0, seed=0, sample_inputs=None):
    """One approximation at parameters ``p``: evidence, terms, sandwich values, predictions, and
    ``num_samples`` draws of f at ``sample_inputs`` (default ``inputs``; a coarser grid keeps the
    eigendecomposition of the predictive covariance cheap), kept with the result."""
    res = ApproximationResult(name=name, params=p)
    exact_cache = exact_cache or _ExactCache(ds)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", JitterWarning)  # reported as a badge instead
            model = build_model(ds, name, p)
            terms, res.mean, res.var_f = model.terms_and_predict_f(inputs)
            res.terms = _log_terms(terms)
            res.log_evidence = -float(sum(terms.values()))
            res.jitter_used = model.jitter_used
            if name == "exact":
                exact_cache.store(p, res.log_evidence)
            res.exact_at_params = exact_cache(p)
            if name != "exact":
                res.upper_bound = float(model.upper_bound())
                ls = _lengthscale(p.kernel)
                if isinstance(model.inducing, InducingPoints):
                    res.clumped_pairs = diagnostics.clumped_pairs(model.Z, ls, CLUMP_TOL)
                else:  # widths and frequencies matter too: compare the inducing outputs themselves
                    res.duplicate_features = near_duplicates(model.inducing, p.kernel)
                Kuu = covariances.Kuu(model.inducing, p.kernel)
                res.condition_number = diagnostics.condition_number(Kuu, model.jitter_used)
                res.kuu_min_eigenvalue = diagnostics.smallest_eigenvalue(Kuu)
            if num_samples:
                res.sample_inputs = np.asarray(inputs if sample_inputs is None else sample_inputs, dtype=float)
                res.samples = _samples(model, res.sample_inputs, num_samples, seed)
    except (CholeskyError, ValueError, np.linalg.LinAlgError, FloatingPointError, NotImplementedError) as err:
        res.error = str(err)
    return res


def compare(ds, params: dict, inputs, num_samples=0, seed=0, fitted_noise=None, sample_inputs=None):
    """Evaluate every approximation in ``params`` (name -> ParameterSet) at its own parameters;
    samples (``num_samples`` each) are drawn at ``sample_inputs`` (default ``inputs``).

    ``fitted_noise`` (name -> noise after optimisation, including "exact") enables the
    noise-collapse badge, which only means something for optimised noise (§3.2.1).
    """
    unknown = set(params) - set(APPROXIMATIONS)
    if unknown:
        raise ValueError(f"unknown approximation(s) {sorted(unknown)}; valid: {APPROXIMATIONS}")
    cache = _ExactCache(ds)
    results = {name: evaluate(ds, name, params[name], inputs, cache, num_samples, seed, sample_inputs)
               for name in APPROXIMATIONS if name in params}
    return Comparison(results=results, inputs=np.asarray(inputs), badges=badges(results, fitted_noise))


def badges(results: dict, fitted_noise=None) -> list:
    """Pathology badges with one-line explanations (thesis §3.2.1, 3.2.2, 3.2.6).

    An approximation other than VFE (a lower bound: never flagged) whose evidence is above the
    exact log p(y) at its own parameters gets ``above-exact``; above an upper bound on log p(y)
    (Titsias' at its Z, or with Z optimised for the bound), which proves it without the exact
    value, it gets ``above-upper-bound`` instead, the stronger claim."""
    out = []
    for name, r in results.items():
        label = LABELS[name]
        if r.error:
            out.append(Badge("failure", name, f"{label} failed numerically: {r.error}"))
            continue
        if r.jitter_used > r.params.jitter * 1.0001:
            out.append(Badge("jitter", name, f"{label}: Kuu needed jitter {r.jitter_used:.1e} "
                                             f"(set: {r.params.jitter:.0e}) to be factorised."))
        if name == "exact":
            continue
        if r.clumped_pairs:
            out.append(Badge("clumping", name,
                             f"{label}: {r.clumped_pairs} pair(s) of inducing inputs closer than "
                             f"{CLUMP_TOL} lengthscales; cond(Kuu + jitter I) = {format_number(r.condition_number)}. "
                             "Clumped inputs act as one, switching the others off (§3.2.2)."))
        elif r.duplicate_features:
            pairs = ", ".join(f"{i + 1} and {j + 1} ({format_correlation(c)})" for i, j, c in r.duplicate_features[:3])
            out.append(Badge("near-duplicate", name,
                             f"{label}: inducing features {pairs} are near-duplicates: their u are correlated "
                             f"above {DUPLICATE_CORRELATION} (thesis §4.4.2). Such a pair can act as one new basis "
                             "function (their difference) or as one feature; jitter decides which."))
        elif r.kuu_min_eigenvalue < r.jitter_used or r.condition_number > ILL_CONDITIONED:
            out.append(Badge("ill-conditioned", name,
                             f"{label}: Kuu is ill-conditioned: its smallest eigenvalue "
                             f"{format_number(max(r.kuu_min_eigenvalue, 0.0))} is below the jitter {r.jitter_used:.0e} "
                             f"added to its diagonal, so cond(Kuu + jitter I) = {format_number(r.condition_number)} is "
                             "set by the "
                             f"jitter. No two inducing inputs are within {CLUMP_TOL} lengthscales: they are dense "
                             "for this lengthscale, and some add almost nothing."))
        badge = _overestimate(name, r)
        if badge is not None:
            out.append(badge)
    if fitted_noise and "exact" in fitted_noise:
        exact_noise = fitted_noise["exact"]
        for name, noise in fitted_noise.items():
            if name != "exact" and diagnostics.noise_collapsed(noise, exact_noise, NOISE_COLLAPSE_RATIO):
                out.append(Badge("noise-collapse", name,
                                 f"{LABELS[name]} noise {format_number(noise)} is {format_number(noise / exact_noise)} "
                                 f"of the exact GP's {format_number(exact_noise)}: it explains data with the "
                                 "heteroscedastic diagonal instead (§3.2.1)."))
    return out


def _overestimate(name, r):
    """The ``above-upper-bound`` or ``above-exact`` badge of one result, or None (VFE: always None)."""
    if name in ("exact", "vfe"):
        return None
    label, evidence, upper = LABELS[name], r.log_evidence, r.tightest_upper_bound
    if diagnostics.exceeds_upper_bound(evidence, upper, OVERESTIMATE_TOL):
        return Badge("above-upper-bound", name,
                     f"{label}'s evidence {format_number(evidence)} exceeds an upper bound on the exact log p(y), "
                     f"{format_number(upper)}: it overestimates the marginal likelihood, proven from the bound "
                     f"alone (the exact log p(y) is {format_number(r.exact_at_params)}; §3.2.6).")
    if diagnostics.exceeds_exact(evidence, r.exact_at_params, OVERESTIMATE_TOL):
        return Badge("above-exact", name,
                     f"{label}'s evidence {format_number(evidence)} is above the exact log p(y) at the same "
                     f"parameters, {format_number(r.exact_at_params)}, by {format_number(evidence - r.exact_at_params)}: "
                     "it overestimates the marginal likelihood (§3.2.6). The upper bound "
                     f"{format_number(upper)} does not show it; with Z optimised for the bound it may.")
    return None


def basis_functions(p: ParameterSet, inputs):
    """[M, G] each inducing feature's basis function Kuf(x, z_m) / sigma^2 on ``inputs`` (what
    the lab draws under the posterior: a bump, a wavelet, a sum of kernel bumps)."""
    Kuf = covariances.Kuf(p.inducing, p.kernel, np.asarray(inputs, dtype=float))
    scale = float(np.max(np.atleast_1d(getattr(p.kernel, "variance", 1.0))))
    return Kuf / scale


def parameter_key(p: ParameterSet):
    """A hashable fingerprint of a parameter set (to reuse results computed for it)."""
    if not isinstance(p.inducing, InducingFeature):
        return _hyperparameter_key(p) + (None if p.inducing is None else p.inducing.tobytes(), p.jitter)
    # the locations too: a feature's fixed attributes (an offset, say) are not among its parameters
    feature = tuple((n, v.tobytes()) for n, v in p.inducing.parameters.items())
    locations = np.asarray(p.inducing.locations, dtype=float).tobytes()
    return _hyperparameter_key(p) + ((type(p.inducing).__name__, locations) + feature, p.jitter)


def default_grid(X, n=300, margin=0.1):
    """An evenly spaced 1-D grid over the data range extended by ``margin`` on both sides."""
    lo, hi = float(np.min(X)), float(np.max(X))
    pad = margin * max(hi - lo, 1e-9)
    return np.linspace(lo - pad, hi + pad, n)[:, None]
