"""Whitened coordinates for the FG (and mean-field) q block (gpexplorer/variational/whitening.py): an exact change
of the optimiser's variables (round trip, chain rule against finite differences, the prior term
becoming -1/2 |z|^2), and what it is for: a full Gaussian fitted by the block optimiser on an
ill-conditioned Kuu reaches a far higher ELBO in the same budget."""

import numpy as np
import pytest
from scipy import linalg as sla

from gpexplorer import kernels
from gpexplorer.variational import SparseVariationalGP, fitting, whitening
from gpexplorer.variational.families import make_posterior
from gpexplorer.variational.whitening import WhitenedCoordinates


def chols(M, seed=0, Q=1):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(Q):
        Z = np.sort(rng.uniform(0, 3, M))[:, None]
        K = kernels.SquaredExponential(lengthscale=0.8).K(Z) + 1e-6 * np.eye(M)
        out.append(np.linalg.cholesky(K))
    return out


def block_chols(sizes, Q=1):
    """Cholesky factors of block-diagonal Kuu (independent components, as a mean-field q has)."""
    return [sla.block_diag(*[chols(b, seed=10 * q + i)[0] for i, b in enumerate(sizes)]) for q in range(Q)]


@pytest.mark.parametrize("Q,kind", [(1, "fg"), (2, "fg"), (1, "mean_field"), (2, "mean_field")])
def test_round_trip_and_chain_rule_match_finite_differences(Q, kind):
    M, blocks = 6, (4, 2)
    post = make_posterior(kind, M, Q, blocks=[blocks] * Q if kind == "mean_field" else None)
    rng = np.random.default_rng(1)
    post.set_free(rng.normal(scale=0.4, size=post.num_free))
    W = WhitenedCoordinates(post, chols(M, Q=Q) if kind == "fg" else block_chols(blocks, Q))
    z = W.to_z(post.free)
    np.testing.assert_allclose(W.to_free(z), post.free, rtol=1e-9, atol=1e-9)
    c = rng.normal(size=post.num_free)  # F(free) = c . free + 1/2 |free|^2: gradient c + free
    F = lambda free: c @ free + 0.5 * free @ free  # noqa: E731
    g = W.gradient(z, c + W.to_free(z))
    h = 1e-6
    fd = np.array([(F(W.to_free(z + h * e)) - F(W.to_free(z - h * e))) / (2 * h) for e in np.eye(z.size)])
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)


def test_the_prior_term_is_minus_half_the_squared_norm_in_whitened_coordinates():
    M = 7
    post = make_posterior("fg", M, 1)
    Lk = chols(M, seed=2)
    W = WhitenedCoordinates(post, Lk)
    rng = np.random.default_rng(3)
    z = rng.normal(scale=0.5, size=post.num_free)
    post.set_free(W.to_free(z))
    cross, _, _ = post.cross_term(Lk)
    sm, sc = post.slices(0, 0)
    Lt = np.zeros((M, M))
    Lt[np.tril_indices(M)] = z[sc]
    d = np.arange(M)
    Lt[d, d] = np.exp(Lt[d, d])
    const = -0.5 * (M * np.log(2 * np.pi) + 2 * np.sum(np.log(np.diag(Lk[0]))))
    assert cross == pytest.approx(const - 0.5 * (z[sm] @ z[sm] + np.sum(Lt ** 2)), rel=1e-9)


def test_only_the_full_gaussian_is_whitened():
    with pytest.raises(ValueError, match="full Gaussian"):
        WhitenedCoordinates(make_posterior("mog1", 5, 1), chols(5))
    rng = np.random.default_rng(4)
    X = rng.uniform(-3, 3, (40, 1))
    Y = (rng.uniform(size=40) < 0.5).astype(float)
    m = SparseVariationalGP(X, Y, kernels.SquaredExponential(), 6, "bernoulli_logit", posterior="mog1")
    packer = fitting.Packer(m.parameter_specs, m.parameters, frozenset())
    assert whitening.whitened_block(m, packer, packer.pack(m.parameters)) is None


def test_whitening_lets_the_fg_block_optimiser_fit_an_ill_conditioned_problem():
    """The lab's default budget (3 rounds x 10 evaluations per block) on 150 points of a 1-D
    binary toy with M = 15 (cond(Kuu) ~ 1e6): unwhitened, FG's ELBO barely leaves the prior."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, (150, 1))
    Y = (rng.uniform(size=150) < 1 / (1 + np.exp(-2.5 * np.sin(1.5 * X[:, 0])))).astype(float)
    out = {}
    for whiten in (False, True):
        m = SparseVariationalGP(X, Y, kernels.SquaredExponential(), 15, "bernoulli_logit", posterior="fg")
        start = m.elbo()
        r = m.fit(max_iter=3, method="block-lbfgs", evals_per_block=10, whiten=whiten)
        assert r.details["whitened_q"] is whiten
        assert m.elbo() == pytest.approx(-r.objective, rel=1e-9)  # left at the traced best point
        out[whiten] = -r.objective
    assert out[True] > out[False] + 10.0 and out[False] > start
