"""The variational families by name: "fg" (:class:`.posterior.FullGaussian`), "mean_field"
(:class:`.mean_field.MeanFieldGaussian`), "mog1", "mog2" and ("mog", K)
(:class:`.mixture.MixtureOfDiagonalGaussians`)."""

from __future__ import annotations

from gpexplorer.variational.mean_field import MeanFieldGaussian
from gpexplorer.variational.mixture import MixtureOfDiagonalGaussians
from gpexplorer.variational.posterior import FullGaussian, VariationalPosterior, inducing_sizes


def make_posterior(kind, num_inducing, num_latent=None, blocks=None):
    """"fg", "mean_field" (with ``blocks``: per latent the sizes of its independent components), "mog1",
    "mog2" or ("mog", K)."""
    if isinstance(kind, VariationalPosterior):
        if kind.sizes != inducing_sizes(num_inducing, num_latent):
            raise ValueError(f"the posterior has sizes {kind.sizes}; the model needs {inducing_sizes(num_inducing, num_latent)}")
        return kind
    if kind == "fg":
        return FullGaussian(num_inducing, num_latent)
    if kind == "mean_field":
        if blocks is None:
            raise ValueError("posterior='mean_field' needs the sizes of each latent's components (blocks)")
        return MeanFieldGaussian(num_inducing, num_latent, blocks=blocks)
    if kind in ("mog1", "mog2"):
        return MixtureOfDiagonalGaussians(num_inducing, num_latent, K=int(kind[-1]))
    if isinstance(kind, tuple) and len(kind) == 2 and kind[0] == "mog":
        return MixtureOfDiagonalGaussians(num_inducing, num_latent, K=kind[1])
    raise ValueError(f"posterior must be 'fg', 'mean_field', 'mog1', 'mog2' or ('mog', K); got {kind!r}")


__all__ = ["make_posterior"]
