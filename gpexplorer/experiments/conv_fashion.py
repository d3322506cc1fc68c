"""Fashion-MNIST with the kernels of thesis Table 5.1 (issue 26): ``gpexplorer reproduce conv-fashion``.

A case the thesis did not run, so there are no numbers of its own to set ours beside: the study of
:mod:`.conv_mnist10` (SE, invariant, weighted and weighted + SE kernels with a joint q, eq.
5.11-5.13, 5.45-5.47, 5.50-5.60, and weighted + SE with the mean-field q; robust max, minibatch
Adam, one GP per class) on
``fashion_mnist5k`` (4000 train / 1000 test, 400 / 100 per class, drawn from Fashion-MNIST's
60,000 / 10,000), pooled to 14x14 with 5x5 patches, "mean" scaling. The claims are the thesis'
MNIST orderings (weighted beats invariant, weighted + SE beats weighted, ...) checked on this
harder grey-scale task; whichever way they come out is reported.
"""

from __future__ import annotations

from gpexplorer.experiments import conv_mnist10

__all__ = ["run", "format_report"]


def run(quick=False, seed=0, max_iter=None, num_inducing=None, scheduler=None, n_workers=None, out=None, **options):
    """The study on ``fashion_mnist5k``; ``options`` as :func:`gpexplorer.experiments.conv_mnist10.run_study`."""
    return conv_mnist10.run_study("fashion_mnist5k", quick, seed, max_iter, num_inducing, scheduler, n_workers, out,
                                  **options)


def format_report(result):
    return conv_mnist10.format_study(result, "Fashion-MNIST (not run in the thesis: ours only), the kernels of "
                                             "thesis Table 5.1", thesis=False)
