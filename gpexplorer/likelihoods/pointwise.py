"""Pointwise likelihoods p(y_n | f_n) for sparse variational inference (SAVIGP, issue 16).

The conditional likelihood factorises over data points (SAVIGP paper eq. 2); each class here
evaluates log p(y_n | f_n), its derivatives with respect to the latent values and to its own
parameters, samples, and the conditional mean and variance of y. The interface is described in
:mod:`gpexplorer.likelihoods.pointwise_base`; Gauss-Hermite expectations under Gaussians are in
:mod:`gpexplorer.likelihoods.quadrature`.

Registered likelihoods (``LIKELIHOODS``; options and parameters with defaults in brackets):

=================  =========================================  ===  ================  ======================
name               p(y | f)                                   Q    parameters        source
=================  =========================================  ===  ================  ======================
gaussian           N(y; f, variance)                          1    variance [1]      paper sec. 6 (Boston)
bernoulli_logit    expit(s f), s = 2y - 1, y in {0,1}/{-1,1}   1    -                 paper sec. 6 (cancer)
bernoulli_probit   Phi(s f)                                   1    -                 probit variant
poisson            Poisson(y; binsize exp(f + offset))        1    - (offset [0],    paper sec. 6 (LGCP),
                                                                   binsize [1])      spec savigp.md
binomial           C(n, y) expit(f)^y expit(-f)^(n - y)       1    - (trials n [1])  revrand report 1.3
softmax            exp(f_y) / sum_k exp(f_k), y in 0..K-1     K    - (n_classes [3]) paper sec. 6.2 (MNIST)
robust_max         1 - eps at argmax f, else eps / (K - 1)    K    - (n_classes [3], thesis ch. 5 (MNIST),
                                                                   epsilon [1e-3])   GPflow MultiClass
warped_gaussian    N(t(y); f, variance) t'(y)                 1    variance, a, b,   paper sec. 6 (abalone),
                                                                   c (3 each)        spec savigp.md
=================  =========================================  ===  ================  ======================

``get_likelihood("expression", text="y*f - exp(f) - gammaln(y + 1)")`` builds a log likelihood
typed as text in f and y (``TYPED_LIKELIHOODS``, :mod:`.pointwise_expression`).

Multi-output likelihoods (observations Y of shape (N, P), P = ``n_outputs``) are registered in
``MULTI_OUTPUT_LIKELIHOODS``, which ``get_likelihood`` also resolves; ``LIKELIHOODS`` stays the
single-output (P = 1) set that the user interface and the generic likelihood tests iterate over:

=================  =========================================  ===========  =============  =================
name               p(y | f)                                   Q            parameters     source
=================  =========================================  ===========  =============  =================
gprn               N(y; W g, variance I_P), f = (g, vec W)    Q_f (P + 1)  variance [1]   paper sec. 6.2
                   (n_outputs P [2], n_nodes Q_f [1])                                     (SARCOS), GPRN
=================  =========================================  ===========  =============  =================
"""

from __future__ import annotations

import difflib
import inspect

from gpexplorer.likelihoods.pointwise_base import KINDS, ExpectedLogDensity, PointwiseLikelihood
from gpexplorer.registry import Registry
from gpexplorer.likelihoods.pointwise_binomial import Binomial
from gpexplorer.likelihoods.pointwise_expression import ExpressionLikelihood
from gpexplorer.likelihoods.pointwise_gprn import GPRN
from gpexplorer.likelihoods.pointwise_robustmax import RobustMax
from gpexplorer.likelihoods.pointwise_warped import WarpedGaussian
from gpexplorer.likelihoods.pointwise_zoo import Bernoulli, BernoulliLogit, BernoulliProbit, Gaussian, Poisson, Softmax

__all__ = ["PointwiseLikelihood", "ExpectedLogDensity", "Gaussian", "Bernoulli", "BernoulliLogit", "BernoulliProbit",
           "Poisson", "Binomial", "Softmax", "RobustMax", "WarpedGaussian", "GPRN", "ExpressionLikelihood", "LIKELIHOODS",
           "MULTI_OUTPUT_LIKELIHOODS", "TYPED_LIKELIHOODS", "KINDS", "get_likelihood", "register", "unregister"]

#: single-output likelihoods: name -> class, filled by :func:`register` (each declares its
#: ``name``, ``label``, ``kind`` and ``parameter_specs``; see :mod:`gpexplorer.registry`)
LIKELIHOODS = Registry("likelihood", PointwiseLikelihood, (Gaussian, BernoulliLogit, BernoulliProbit, Poisson, Softmax,
                                                           WarpedGaussian, RobustMax, Binomial))
register = LIKELIHOODS.register
unregister = LIKELIHOODS.unregister

#: likelihoods of observations with P > 1 columns (module docstring)
MULTI_OUTPUT_LIKELIHOODS = Registry("multi-output likelihood", PointwiseLikelihood, (GPRN,))
#: a log density typed as text in f and y (option ``text``; no sampler, so not in LIKELIHOODS)
TYPED_LIKELIHOODS = Registry("typed likelihood", PointwiseLikelihood, (ExpressionLikelihood,))

ALIASES = {"normal": "gaussian", "logit": "bernoulli_logit", "logistic": "bernoulli_logit",
           "probit": "bernoulli_probit", "lgcp": "poisson", "warped": "warped_gaussian", "wgp": "warped_gaussian",
           "robustmax": "robust_max"}


def get_likelihood(spec, **options):
    """A :class:`PointwiseLikelihood` from a registered name (``LIKELIHOODS``,
    ``MULTI_OUTPUT_LIKELIHOODS`` or ``TYPED_LIKELIHOODS``; case-insensitive; aliases normal,
    logit, logistic, probit, lgcp, warped, wgp, robustmax) with constructor options, or an instance (returned
    as is; options are then refused). Unknown names raise ValueError with the closest match."""
    if isinstance(spec, PointwiseLikelihood):
        if options:
            raise ValueError(f"options {sorted(options)} cannot be applied to an existing likelihood instance")
        return spec
    if not isinstance(spec, str):
        raise ValueError(f"likelihood must be a name or a PointwiseLikelihood; got {type(spec).__name__}")
    key = spec.strip().lower()
    key = ALIASES.get(key, key)
    registered = {**LIKELIHOODS, **MULTI_OUTPUT_LIKELIHOODS, **TYPED_LIKELIHOODS}
    if key not in registered:
        close = difflib.get_close_matches(key, list(registered) + list(ALIASES), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"unknown likelihood {spec!r}{hint}. Registered: {', '.join(registered)}")
    factory = registered[key]
    try:
        inspect.signature(factory).bind(**options)
    except TypeError:
        accepted = [p for p in inspect.signature(factory).parameters]
        raise ValueError(f"likelihood {key!r} does not accept the options {sorted(options)}; "
                         f"it accepts: {', '.join(accepted) or 'none'}") from None
    return factory(**options)
