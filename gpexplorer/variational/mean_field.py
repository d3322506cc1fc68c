"""The mean-field Gaussian q(u) over independent components (thesis §5.7.2 and §5.8): for a sum
f = f_1 + ... + f_C of independent GPs with u = [u_1; ...; u_C] (a convolutional + SE kernel with
:class:`gpexplorer.inducing.Components`, or the C channel GPs of the multi-channel convolutional
kernel), q(u) = prod_c N(u_c; m_c, S_c) instead of one full Gaussian over the stacked u: S is
block-diagonal, C blocks of M_c x M_c in place of one (sum M_c)^2 matrix.

It is the full Gaussian of :mod:`.posterior` with L_S restricted to its diagonal blocks, so every
formula of the ELBO (marginals, entropy, cross term) is FG's with S block-diagonal; only the free
vector differs: per latent, m_j then each block's lower triangle (diagonal as logs). With the
prior's block-diagonal Kuu the marginal variance is then the sum of the components' own
(eq. 5.60 with S_ij = 0 for i != j), and the ELBO is at most the full Gaussian's at its optimum.

Natural gradients are not offered for it (:func:`gpexplorer.variational.natural_gradients.supports`).
"""

from __future__ import annotations

import numpy as np

from gpexplorer.variational.posterior import FullGaussian, inducing_sizes


class MeanFieldGaussian(FullGaussian):
    """FG with S_j block-diagonal over ``blocks[j]`` (sizes summing to M_j), one block per component."""

    mean_field = True

    def __init__(self, num_inducing, num_latent=None, *, blocks):
        sizes = inducing_sizes(num_inducing, num_latent)
        blocks = [tuple(int(b) for b in bj) for bj in blocks]
        if len(blocks) != len(sizes):
            raise ValueError(f"mean-field blocks must be given per latent ({len(sizes)}); got {len(blocks)}")
        for j, (m, bj) in enumerate(zip(sizes, blocks)):
            if len(bj) < 2 or min(bj) < 1 or sum(bj) != m:
                raise ValueError(f"latent {j}: a mean-field q needs at least two blocks of positive sizes summing to "
                                 f"its {m} inducing variables; got {bj}")
        self._block_sizes = blocks
        super().__init__(sizes)

    def block_sizes(self, j):
        return self._block_sizes[j]

    def _check_structure(self, j, L):
        mask = np.zeros(L.shape, dtype=bool)
        for o, b, _ in self.triangles(j):
            mask[o:o + b, o:o + b] = True
        if np.any(L[~mask] != 0.0):
            raise ValueError(f"latent {j}: a mean-field q(u) has a block-diagonal factor over the blocks "
                             f"{self.block_sizes(j)}; the factor given has entries outside them")


def component_blocks(feature, kernel):
    """The mean-field blocks of one latent: a Components feature's sizes, or the C equal blocks of a
    multi-channel convolutional kernel; a ValueError naming what is needed otherwise."""
    from gpexplorer.inducing.components import Components  # inducing imports nothing of variational

    if isinstance(feature, Components):
        return tuple(len(f) for f in feature.features)
    groups = getattr(getattr(kernel, "layout", None), "n_groups", 1)
    if groups > 1:
        return (len(feature) // groups,) * groups
    raise ValueError("posterior='mean_field' needs independent components to factorise over: a sum kernel with a "
                     "Components feature (one inducing feature per component) or a multi-channel convolutional "
                     f"kernel (colour='multi'); got {type(feature).__name__} with {type(kernel).__name__}")


__all__ = ["MeanFieldGaussian", "component_blocks"]
