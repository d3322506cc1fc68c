"""The primer's computations (issue 28): kernel expressions (whitelist), prior samples, conditioning
and the two views of one Gaussian against the exact GP and direct Gaussian algebra; the sequential
evidence (thesis eq. 5.2) against the exact log marginal likelihood and a plain conditional-Gaussian
reference; Occam filtering (fig. 5.1) against the box probability (Genz's CDF) and p(y)."""

import math

import numpy as np
import pytest

from gpexplorer.kernels import Linear, Periodic, Product, SquaredExponential, Sum
from gpexplorer.kernels.expression import MAX_TERMS, parse_kernel
from gpexplorer.primer import condition, ellipse, occam_filter, pair_marginal, prior_samples, sequential_evidence
from gpexplorer.primer.evidence import box_probability
from gpexplorer.sparse.regression import ExactGPR

RNG = np.random.default_rng(3)
X = np.sort(RNG.uniform(0, 3, size=12))[:, None]
Y = np.sin(2 * X[:, 0]) + 0.2 * RNG.standard_normal(12)
KERNEL = SquaredExponential(variance=1.3, lengthscale=0.6)
NOISE = 0.05


def test_kernel_expressions_follow_precedence_and_refuse_everything_else():
    k = parse_kernel("se + periodic * linear")
    assert isinstance(k, Sum) and isinstance(k.kernels[1], Product)
    Xs = np.linspace(-1, 2, 7)[:, None]
    reference = SquaredExponential().K(Xs) + Periodic().K(Xs) * Linear().K(Xs)
    assert np.allclose(k.K(Xs), reference)
    assert np.allclose(parse_kernel("(se + periodic) * linear").K(Xs), (SquaredExponential().K(Xs) + Periodic().K(Xs))
                       * Linear().K(Xs))
    assert len(parse_kernel("se + se").parameters) == 4  # each occurrence its own hyperparameters
    for bad, says in [("2 * se", "not allowed"), ("se ** 2", "not allowed"), ("__import__('os')", "not allowed"),
                      ("se.variance", "not allowed"), ("se - linear", "not allowed"), ("foo", "unknown"),
                      ("convolutional", "images"), ("se +", "cannot read"), ("", "needed"),
                      (" + ".join(["se"] * (MAX_TERMS + 1)), "more than"), ("se" * 100, "characters")]:
        with pytest.raises(ValueError, match=says):
            parse_kernel(bad)


def test_prior_samples_have_the_kernel_as_covariance():
    Xs = np.linspace(0, 2, 6)[:, None]
    samples, jitter = prior_samples(KERNEL, Xs, num_samples=40_000, seed=1)
    assert samples.shape == (40_000, 6) and jitter < 1e-8
    assert np.max(np.abs(np.cov(samples.T) - KERNEL.K(Xs))) < 0.05


def test_conditioning_equals_the_exact_gp_and_two_views_agree():
    Xs = np.linspace(-0.5, 3.5, 30)[:, None]
    post = condition(KERNEL, X, Y, NOISE, Xs, num_samples=3, seed=0)
    gp = ExactGPR(X, Y[:, None], KERNEL, noise_variance=NOISE)
    mean, var = (np.ravel(a) for a in gp.predict_f(Xs))
    assert np.allclose(post.mean, mean, atol=1e-9) and np.allclose(post.var_f, var, atol=1e-9)
    assert np.allclose(post.var_y, post.var_f + NOISE) and post.samples.shape == (3, 30)
    prior = condition(KERNEL, None, None, NOISE, Xs)
    assert np.allclose(prior.mean, 0.0) and np.allclose(prior.var_f, 1.3)
    pm = pair_marginal(KERNEL, [0.4], [1.1], X, Y, NOISE)
    full_mean, full_cov = gp.predict_f(np.array([[0.4], [1.1]]), full_cov=True)
    assert np.allclose(pm.mean, np.ravel(full_mean), atol=1e-9) and np.allclose(pm.cov, full_cov, atol=1e-9)
    prior_pair = pair_marginal(KERNEL, [0.4], [1.1])
    assert np.allclose(prior_pair.cov, KERNEL.K(np.array([[0.4], [1.1]])))
    # f(x2) | f(x1) = a: the 2-D view against conditioning the function view on a (nearly) noise-free point
    m2, v2 = prior_pair.given_first(0.8)
    direct = condition(KERNEL, np.array([[0.4]]), np.array([0.8]), 1e-12, np.array([[1.1]]))
    assert m2 == pytest.approx(direct.mean[0], rel=1e-9) and v2 == pytest.approx(direct.var_f[0], rel=1e-6)
    ring = ellipse(pm.mean, pm.cov, level=2.0, points=64)
    d = ring - pm.mean
    assert np.allclose(np.einsum("ij,jk,ik->i", d, np.linalg.inv(pm.cov), d), 4.0)


def _conditional_reference(C, y, n):
    """log N(y_n | mu, v) of y_n given y_0..y_{n-1} by the Gaussian conditioning formula."""
    if n == 0:
        mu, v = 0.0, C[0, 0]
    else:
        A, b = C[:n, :n], C[:n, n]
        mu = b @ np.linalg.solve(A, y[:n])
        v = C[n, n] - b @ np.linalg.solve(A, b)
    return -0.5 * (math.log(2 * math.pi * v) + (y[n] - mu) ** 2 / v), mu, v


def test_sequential_evidence_sums_to_the_exact_evidence_in_any_order():
    seq = sequential_evidence(KERNEL, X, Y, NOISE)
    exact = ExactGPR(X, Y[:, None], KERNEL, noise_variance=NOISE).log_marginal_likelihood()
    assert seq.total == pytest.approx(exact, rel=1e-12)
    C = KERNEL.K(X) + NOISE * np.eye(12)
    for n in range(12):
        term, mu, v = _conditional_reference(C, Y, n)
        assert seq.terms[n] == pytest.approx(term, rel=1e-9) and seq.means[n] == pytest.approx(mu, abs=1e-9)
        assert seq.variances[n] == pytest.approx(v, rel=1e-9)
    order = np.random.default_rng(0).permutation(12)
    shuffled = sequential_evidence(KERNEL, X, Y, NOISE, order=order)
    assert shuffled.total == pytest.approx(exact, rel=1e-12)
    assert not np.allclose(shuffled.terms, seq.terms[order])  # the bars change, their sum does not
    with pytest.raises(ValueError, match="permutation"):
        sequential_evidence(KERNEL, X, Y, NOISE, order=[0] * 12)


def test_filtering_share_estimates_the_box_probability_and_p_of_y():
    X3, y3 = X[[1, 5, 9]], Y[[1, 5, 9]]
    p_y = math.exp(sequential_evidence(KERNEL, X3, y3, 0.1).total)
    errors = []
    for t in (0.4, 0.2, 0.1, 0.05, 0.02):  # the box probability per volume -> p(y) as t shrinks
        errors.append(abs(box_probability(KERNEL, X3, y3, 0.1, t) / (2 * t) ** 3 / p_y - 1))
    assert all(a > b for a, b in zip(errors, errors[1:])) and errors[-1] < 2e-3
    previous = None
    for n in (20_000, 2_000_000):  # the share kept -> the box probability as the samples grow
        f = occam_filter(KERNEL, X3, y3, 0.1, 0.1, num_samples=n, seed=7)
        box = box_probability(KERNEL, X3, y3, 0.1, 0.1)
        se = math.sqrt(box * (1 - box) / n)
        assert abs(f.share - box) < 4 * se and f.log_evidence == pytest.approx(math.log(p_y))
        error = abs(f.density_estimate / p_y - 1)
        assert previous is None or error < max(previous, 0.05)
        previous = error
    assert previous < 0.05
    plot = occam_filter(KERNEL, X3, y3, 0.1, 0.3, num_samples=50_000, X_plot=np.linspace(0, 3, 25), keep=10)
    assert plot.kept.shape == (10, 25)


def test_bad_input_gets_a_message_naming_it():
    cases = [
        (lambda: sequential_evidence(KERNEL, np.array([[np.nan]]), [0.0], NOISE), "X"),
        (lambda: sequential_evidence(KERNEL, X, Y[:5], NOISE), "1 <= N"),
        (lambda: sequential_evidence(KERNEL, X[:0], Y[:0], NOISE), "1 <= N"),
        (lambda: sequential_evidence(KERNEL, X, Y, 0.0), "noise_variance"),
        (lambda: occam_filter(KERNEL, X, Y, NOISE, -1.0), "tolerance"),
        (lambda: occam_filter(KERNEL, X, Y, NOISE, 0.1, num_samples=10 ** 12), "num_samples"),
        (lambda: condition(KERNEL, X, Y, NOISE, np.array([[np.inf]])), "Xnew"),
        (lambda: condition(KERNEL, X, Y[:3], NOISE, X), "y has 3 values"),
        (lambda: prior_samples(KERNEL, np.zeros((6000, 1))), "at most"),
    ]
    for call, says in cases:
        with pytest.raises(ValueError, match=says):
            call()


def test_the_invariant_kernel_is_invariant_and_its_evidence_pulls_ahead_as_images_arrive():
    """Stamped 6 x 6 images whose y depends on the stamp only: the convolutional kernel does not see
    where a stamp is (the SE kernel does), each model's cumulative sequential evidence ends at its
    exact log p(y), and the invariant model ends far ahead, its later predictions tighter."""
    from gpexplorer.primer import evidence_as_data_arrive, invariance_kernels, stamped_images
    X, y, kinds = stamped_images(40, seed=0)
    kernels = invariance_kernels()
    image = np.zeros((6, 6))
    image[1:3, 1:3] = 1.0
    moved = np.roll(image, (2, 1), axis=(0, 1))
    conv, se = kernels["convolutional"], kernels["se"]
    pair = np.vstack([image.ravel(), moved.ravel()])
    assert np.allclose(conv.K(pair[:1], X), conv.K(pair[1:], X)) and not np.allclose(se.K(pair[:1], X), se.K(pair[1:], X))
    curves = evidence_as_data_arrive(kernels, X, y, 0.01)
    for name, (terms, cumulative) in curves.items():
        exact = ExactGPR(X, y[:, None], kernels[name], noise_variance=0.01).log_marginal_likelihood()
        assert cumulative[-1] == pytest.approx(exact, rel=1e-9) and np.allclose(np.cumsum(terms), cumulative)
    assert curves["convolutional"][1][-1] > curves["se"][1][-1] + 20
    assert curves["convolutional"][0][20:].mean() > curves["se"][0][20:].mean()


def test_one_factorisation_serves_the_posterior_the_pair_and_the_bars():
    """ObservedData's factor gives what each view computes on its own (a page makes one per change)."""
    from gpexplorer.primer import ObservedData

    data = ObservedData(KERNEL, X, Y, NOISE)
    Xs = np.linspace(-0.5, 3.5, 9)[:, None]
    alone, shared = condition(KERNEL, X, Y, NOISE, Xs, num_samples=2, seed=4), \
        condition(KERNEL, None, None, NOISE, Xs, num_samples=2, seed=4, data=data)
    for a, b in zip(alone, shared):
        np.testing.assert_allclose(a, b, atol=1e-12)
    mean, var = data.posterior(Xs, full_cov=False)
    np.testing.assert_allclose(mean, alone.mean, atol=1e-12)
    np.testing.assert_allclose(var, alone.var_f, atol=1e-12)
    p1, p2 = pair_marginal(KERNEL, 0.3, 1.7, X, Y, NOISE), pair_marginal(KERNEL, 0.3, 1.7, data=data, noise_variance=NOISE)
    np.testing.assert_allclose(p1.cov, p2.cov, atol=1e-12)
    for order in (None, np.arange(12)[::-1]):  # the data's order uses the factor; another order its own
        a = sequential_evidence(KERNEL, X, Y, NOISE, order=order)
        b = sequential_evidence(KERNEL, X, Y, NOISE, order=order, data=data)
        np.testing.assert_allclose(a.terms, b.terms, atol=1e-12)
    with pytest.raises(ValueError, match="values but X has"):
        ObservedData(KERNEL, X, Y[:3], NOISE)
    with pytest.raises(ValueError, match="noise_variance"):
        ObservedData(KERNEL, X, Y, -1.0)
