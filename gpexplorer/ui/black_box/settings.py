"""The black-box inference lab's configuration as Param parameters.

One :class:`BlackBoxSettings` per session is the single source of truth: widgets are generated
from it (``pn.Param``), the URL mirrors it and the JSON export serialises it.
:func:`fit_options` takes an independent plain snapshot for the background fit, so a worker
never sees later edits. Nothing here touches Bokeh.
"""

from __future__ import annotations

import inspect

import param

from gpexplorer.likelihoods import LIKELIHOODS, TYPED_LIKELIHOODS
from gpexplorer.ui import url_state

DATASETS = {"Coal-mining disasters (LGCP)": "coal", "Breast cancer (30-D binary)": "cancer",
            "1-D binary toy": "toy_binary", "1-D Gaussian toy": "toy_gaussian", "Uploaded CSV": "upload"}
#: the kinds of observations the page's data sets have (a likelihood of another kind, such as
#: categorical for softmax, has no data here: not offered)
OFFERED_KINDS = ("regression", "binary", "counts")


def likelihood_choices():
    """{label: name}: "auto" (the data set's own), every registered likelihood of an offered kind,
    and the typed ones (their text in ``log_likelihood``)."""
    return {"the data set's": "auto", **LIKELIHOODS.choices(lambda cls: cls.kind in OFFERED_KINDS),
            **TYPED_LIKELIHOODS.choices()}


LIKELIHOOD_CHOICES = likelihood_choices()
DEFAULT_EXPRESSION = "y*f - exp(f) - gammaln(y + 1)"
POSTERIORS = {"FG": "fg", "MoG1": "mog1", "MoG2": "mog2"}
LABELS = {v: k for k, v in POSTERIORS.items()}
ESTIMATORS = {"Score function (black box)": "score", "Reparameterisation": "reparam",
              "Gauss-Hermite quadrature": "quadrature"}

# which settings invalidate what: the data (and every fit), or the fits only
DATA = ("dataset", "n_bins", "n_train", "data_seed")
MODEL = ("likelihood", "log_likelihood", "M", "estimator", "num_samples", "control_variate", "rounds", "evals_per_block")
SHOWN = ("posteriors",)


class BlackBoxSettings(param.Parameterized):
    """Everything a user can set on the black-box inference page."""

    dataset = param.Selector(default="coal", objects=DATASETS, doc="Data set to fit")
    n_bins = param.Integer(default=100, bounds=(20, 811), label="Bins (coal)",
                           doc="Coal-mining bins over 1851-1963 (the paper: 811 bins of 50 days; fewer are faster)")
    n_train = param.Integer(default=150, bounds=(20, 500), label="N train",
                            doc="Training points of the toys and of breast cancer (the rest is the test set)")
    data_seed = param.Integer(default=0, bounds=(0, 10_000), doc="Seed of the toy data and of the splits")
    likelihood = param.Selector(default="auto", objects=LIKELIHOOD_CHOICES, label="Likelihood",
                                doc="p(y | f), evaluated only pointwise (the black box)")
    log_likelihood = param.String(default=DEFAULT_EXPRESSION, label="log p(y | f) =",
                                  doc="Typed in f and y: + - * / ^, exp log log1p sqrt sin cos tanh sigmoid "
                                      "log_sigmoid ndtr log_ndtr gammaln ... (whitelisted, never evaluated as code)")
    posteriors = param.ListSelector(default=list(POSTERIORS.values()), objects=POSTERIORS,
                                    label="Posteriors q(u)",
                                    doc="Full Gaussian, or mixtures of 1 or 2 diagonal Gaussians, side by side")
    M = param.Integer(default=15, bounds=(2, 100), label="M (inducing points)", doc="Inducing points per latent")
    estimator = param.Selector(default="score", objects=ESTIMATORS, label="ELL estimator",
                               doc="How the expected log likelihood and its gradients are estimated")
    num_samples = param.Integer(default=200, bounds=(20, 5000), label="S (samples)",
                                doc="Monte Carlo samples per data point (score and reparameterisation)")
    control_variate = param.Boolean(default=True, label="Control variate",
                                    doc="Subtract the score (mean zero) times a fitted constant (score estimator)")
    # 30 rounds at most, stopped as soon as the fit converged (issue 23): every bundled data set
    # x posterior x estimator converges or is flagged (tests/benchmarks/black_box_convergence.py)
    rounds = param.Integer(default=30, bounds=(1, 100), label="Rounds (at most)",
                           doc="Rounds of L-BFGS over the blocks q(u), hyperparameters, likelihood; the fit stops "
                               "earlier once converged. FG with exact gradients (natural gradients for q(u)): "
                               "rounds x evaluations per block L-BFGS iterations at most")
    evals_per_block = param.Integer(default=10, bounds=(2, 100), label="Evaluations per block",
                                    doc="L-BFGS evaluations per block and round (the paper: 25)")

    def __init__(self, **values):
        type(self).param.likelihood.objects = likelihood_choices()  # one registered after import too
        super().__init__(**values)

    def _show(self, name, visible):
        """Hide a control (negative precedence) or show it in its place in :func:`control_groups`."""
        order = url_parameters()
        self.param[name].precedence = 1 + order.index(name) if visible else -1

    @param.depends("dataset", watch=True, on_init=True)
    def _show_data_controls(self):
        self._show("n_bins", self.dataset == "coal")
        self._show("n_train", self.dataset in ("cancer", "toy_binary", "toy_gaussian"))
        self._show("data_seed", self.dataset != "coal")

    @param.depends("likelihood", watch=True, on_init=True)
    def _show_expression(self):
        self._show("log_likelihood", self.likelihood in TYPED_LIKELIHOODS)

    @param.depends("estimator", watch=True, on_init=True)
    def _show_sampling_controls(self):
        self._show("num_samples", self.estimator != "quadrature")
        self._show("control_variate", self.estimator == "score")



def control_groups():
    """Parameter names of each control panel, in display order."""
    return {
        "Data and likelihood": ["dataset", "n_bins", "n_train", "data_seed", "likelihood", "log_likelihood"],
        "Approximation": ["posteriors", "M", "estimator", "num_samples", "control_variate"],
        "Optimiser": ["rounds", "evals_per_block"],
    }


def url_parameters():
    """Settings mirrored in the URL (all of them)."""
    return url_state.grouped_names(control_groups())


def likelihood_name(s, problem):
    """The registered likelihood used: the setting's, or the data set's with "auto"."""
    name = problem.likelihood if s.likelihood == "auto" else s.likelihood
    if name not in LIKELIHOODS and name not in TYPED_LIKELIHOODS:
        raise ValueError(f"unknown likelihood {name!r}")
    return name


def fit_options(s, problem):
    """A plain snapshot of everything the background fit needs from the settings."""
    lik = likelihood_name(s, problem)
    if lik in TYPED_LIKELIHOODS:
        TYPED_LIKELIHOODS[lik](s.log_likelihood).validate(problem.Y)  # a typing error is reported before any fit
        options = {"text": s.log_likelihood}
    else:  # the data set's options (the coal bins' offset) that this likelihood takes
        accepted = inspect.signature(LIKELIHOODS[lik]).parameters
        options = {k: v for k, v in (problem.options or {}).items() if k in accepted}
    return {"likelihood": lik, "likelihood_options": options,
            "M": int(s.M), "estimator": s.estimator, "num_samples": int(s.num_samples),
            "control_variate": bool(s.control_variate and s.estimator == "score"),
            "rounds": int(s.rounds), "evals_per_block": int(s.evals_per_block), "stop_when_converged": True}


def fit_context(s):
    """The settings a fit belongs to (data and model): a fit of another context is stale."""
    return tuple(getattr(s, n) for n in DATA + MODEL)


url_state.order_controls(BlackBoxSettings, url_parameters())
