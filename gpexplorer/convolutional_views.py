"""What the patches lab (issue 26) reads off a fitted convolutional GP, and the one edit it makes
(van der Wilk's thesis ch. 5). No plotting here: arrays in, arrays out.

* the inducing patches as tiles with q(u)'s mean and sd at each (figs 5.6-5.8 sort them by the
  mean): :func:`inducing_tiles`;
* each patch location's contribution to f over one image (eq. 5.45-5.47 under q): with
  q(u) = N(m, S) and u = g(Z), E_q[g(z)] = k_g(z, Z) Kuu^-1 m, so location p contributes

      c_p(x) = scale w_p k_g(x^[p], Z) Kuu^-1 m,     sum_p c_p(x) = Kfu Kuu^-1 m = E_q[f(x)]   (eq. 11)

  (:func:`contributions`; the sum is the latent mean the model predicts);
* the patch weights w_p as an image over the patch positions (fig 5.9): :func:`weights_image`;
* the edge effect: how many patches each pixel belongs to (a pixel in the middle of a 28 x 28
  image sits in h x w patches, a corner pixel in one), :func:`patch_counts`, and the response
  E_q[f] to a bar moved across the image, :func:`bar_response`;
* the number of distinct patches of a set of images (Lemmas 1-3, Theorem 1: Z = the U unique
  patches is optimal): :func:`unique_patch_count`;
* moving one inducing patch (:func:`move_inducing_patch`): Z changes and with it Kuu; q(u) is
  carried over in whitened coordinates (u = Lk v with Kuu + jitter I = Lk Lk^T, q(v) kept, as
  :mod:`gpexplorer.variational.natural_gradients` parameterises it) and then moved towards its
  optimum for the new Z by a few natural-gradient steps. Without the carry-over the old m and S
  under the new Kuu can cost 10^4 nats of ELBO for one flipped pixel (measured on the rectangles).

And the preparation of a hand-drawn digit for a model trained on MNIST: :func:`pool_images`
(average pooling) and :func:`centre_by_mass` (MNIST centres each digit by its centre of mass).
"""

from __future__ import annotations

import functools

import numpy as np
from scipy import linalg as sla

from gpexplorer import _threads, covariances
from gpexplorer.inducing import InducingPatches
from gpexplorer.kernels import Convolutional
from gpexplorer.linalg import jittered_cholesky
from gpexplorer.variational.natural_gradients import QUpdater, supports

__all__ = ["convolutional_part", "patch_grid", "patch_counts", "weights_image", "inducing_tiles", "contributions",
           "bar_images", "bar_response", "unique_patch_count", "move_inducing_patch", "pool_images",
           "centre_by_mass", "read_off", "feature_parameter", "Q_STEPS_AFTER_MOVE"]

#: natural-gradient steps on q(u) after an inducing patch moved: each costs one ELBO and one
#: gradient of q (rectangles, N = 200, M = 16: about 20 ms each). Measured after one flipped pixel:
#: carried over -44.06, one step -42.950, two -42.908, three -42.906: the first takes almost all
Q_STEPS_AFTER_MOVE = 1


def convolutional_part(model):
    """(kernel, feature) of a model whose latent 0 has a single-channel Convolutional kernel
    with InducingPatches; ValueError naming ``model`` otherwise."""
    kernel, feature = model.kernels[0], model.features[0]
    if not isinstance(kernel, Convolutional) or not isinstance(feature, InducingPatches):
        raise ValueError(f"model must have a Convolutional kernel with InducingPatches; got "
                         f"{type(kernel).__name__} with {type(feature).__name__}")
    if kernel.layout.channels != 1:
        raise ValueError("model: the patch views are for single-channel images")
    return kernel, feature


def patch_grid(layout):
    """(Ph, Pw): the patch positions down and across an image (P = Ph x Pw for one channel)."""
    (H, W), (h, w) = layout.image_shape, layout.patch_shape
    return H - h + 1, W - w + 1


def patch_counts(layout):
    """[H, W] how many of the P patches each pixel belongs to (min(i+1, h, H-i) x the same across)."""
    H, W = layout.image_shape
    pixels = layout.index.ravel() // layout.channels
    return np.bincount(pixels, minlength=H * W).reshape(H, W) // layout.channels


def weights_image(kernel):
    """[Ph, Pw] the patch weights w_p at their positions (all ones for an unweighted kernel)."""
    return np.asarray(kernel.weights, dtype=float).reshape(patch_grid(kernel.layout))


def _latent(model, latent):
    if isinstance(latent, bool) or not isinstance(latent, (int, np.integer)) or not 0 <= latent < model.Q:
        raise ValueError(f"latent must be an integer from 0 to {model.Q - 1}; got {latent!r}")
    if model.posterior.K != 1:
        raise ValueError("the patch views need a one-component q(u) (posterior 'fg' or 'mog1')")
    return int(latent)


def inducing_tiles(model, latent=0):
    """{"patches" [M, h, w], "mean" [M], "sd" [M], "order" [M]}: each inducing patch, q(u)'s mean
    and sd at it for ``latent`` and the order that sorts them by the mean (figs 5.6-5.8)."""
    kernel, feature = convolutional_part(model)
    j = _latent(model, latent)
    mean = np.asarray(model.posterior.means[j][0], dtype=float)
    sd = np.sqrt(np.maximum(np.diag(model.posterior.covariance(0, j)), 0.0))
    h, w = kernel.layout.patch_shape
    return {"patches": feature.Z.reshape(-1, h, w).copy(), "mean": mean, "sd": sd,
            "order": np.argsort(mean, kind="stable")}


def _alpha(model, kernel, feature, latent):
    """(Kuu + jitter I)^-1 m for ``latent``, with the jitter the model's marginals use."""
    L, _ = jittered_cholesky(covariances.Kuu(feature, kernel), model.jitter, what="Kuu", warn=False)
    return sla.cho_solve((L, True), np.asarray(model.posterior.means[latent][0], dtype=float), check_finite=False)


def contributions(model, x, latent=0):
    """[Ph, Pw] c_p(x) = scale w_p k_g(x^[p], Z) Kuu^-1 m for one image ``x`` (module docstring):
    what each patch location adds to E_q[f(x)] of ``latent``; the entries sum to it."""
    kernel, feature = convolutional_part(model)
    j = _latent(model, latent)
    x = kernel.layout.check(x, "x")
    if x.shape[0] != 1:
        raise ValueError(f"x must be one image; got {x.shape[0]}")
    patches = kernel.layout.patches(x)[0]  # [P, E]
    values = kernel.effective_weights * (kernel.patch_kernel.K(patches, feature.Z) @ _alpha(model, kernel, feature, j))
    return values.reshape(patch_grid(kernel.layout))


def bar_images(image_shape, length=None, value=1.0):
    """[W, H*W] images holding one vertical bar each, at columns 0 .. W-1, over the middle
    ``length`` rows (default: half the height) and 0 elsewhere."""
    H, W = image_shape
    length = H // 2 if length is None else int(length)
    if not 1 <= length <= H:
        raise ValueError(f"length must be from 1 to the image height {H}; got {length}")
    top = (H - length) // 2
    out = np.zeros((W, H, W))
    for c in range(W):
        out[c, top:top + length, c] = value
    return out.reshape(W, H * W)


def bar_response(model, latent=0, length=None):
    """The edge effect: {"column", "mean", "sd", "patches"} over the columns of the image, for a
    vertical bar (:func:`bar_images`) at each: q(f)'s mean and sd for ``latent`` and the number
    of patch positions the bar's pixels sit in (the same bar counts less at the edge)."""
    kernel, _ = convolutional_part(model)
    j = _latent(model, latent)
    bars = bar_images(kernel.layout.image_shape, length)
    mean, var = model.predict_f(bars)
    return {"column": np.arange(len(bars)), "mean": mean[:, j], "sd": np.sqrt(np.maximum(var[:, j], 0.0)),
            "patches": _touched(kernel.layout, bars)}


def _touched(layout, images):
    """[n] how many patch positions hold a nonzero pixel of each image."""
    return np.array([int(np.count_nonzero(np.any(x[layout.index] != 0, axis=1))) for x in images])


@functools.lru_cache(maxsize=8)
def _bars(layout):
    """The bar images of a layout and the patch positions each touches (the same for every edit)."""
    bars = bar_images(layout.image_shape)
    bars.setflags(write=False)
    return bars, _touched(layout, bars)


def unique_patch_count(kernel, X):
    """U: the number of distinct patches of ``kernel``'s size in the images X (§5.4)."""
    if not isinstance(kernel, Convolutional):
        raise ValueError(f"kernel must be a Convolutional kernel; got {type(kernel).__name__}")
    return int(len(kernel.decomposition(kernel.layout.check(X))[0]))


def _whitened(model, kernel, feature):
    """Per latent (mu, L~): q(u)'s mean and factor in whitened coordinates at the current Kuu."""
    Lk, _ = jittered_cholesky(covariances.Kuu(feature, kernel), model.jitter, what="Kuu", warn=False)
    post = model.posterior
    return [(sla.solve_triangular(Lk, post.means[j][0], lower=True, check_finite=False),
             sla.solve_triangular(Lk, post.factor(j), lower=True, check_finite=False)) for j in range(model.Q)]


def move_inducing_patch(model, index, patch, q_steps=Q_STEPS_AFTER_MOVE):
    """Set inducing patch ``index`` to ``patch`` (E values), carry q(u) over in whitened
    coordinates and take ``q_steps`` natural-gradient steps on it (module docstring); returns the
    ELBO after. The model must have a full-Gaussian q(u) and an estimator natural gradients take.
    ValueError, with the model unchanged, for a bad index, patch or a Kuu that cannot be factorised."""
    kernel, feature = convolutional_part(model)
    if model.posterior.diagonal:
        raise ValueError("model: moving an inducing patch carries a full-Gaussian q(u) over (posterior 'fg')")
    M, E = feature.Z.shape
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < M:
        raise ValueError(f"index must be an integer from 0 to {M - 1}; got {index!r}")
    patch = np.asarray(patch, dtype=float).reshape(-1)
    if patch.shape != (E,) or not np.all(np.isfinite(patch)) or np.max(np.abs(patch)) > 1e6:
        raise ValueError(f"patch must hold {E} finite values (at most 1e6 in magnitude); got shape {patch.shape}")
    if q_steps and supports(model) is not None:
        raise ValueError(f"model: {supports(model)}")
    with _threads.single_threaded():  # a threaded 16 x 16 inverse took 30 ms under load, 0.05 ms without
        return _move(model, kernel, feature, index, patch, q_steps)


def _move(model, kernel, feature, index, patch, q_steps):
    before = model.parameters
    whitened = _whitened(model, kernel, feature)
    Z = feature.Z.copy()
    Z[index] = patch
    try:
        model.set_parameters(**{feature_parameter(model): Z})
        Lk, _ = jittered_cholesky(covariances.Kuu(feature, kernel), model.jitter, what="Kuu", warn=False)
        model.posterior.set_moments([Lk @ mu for mu, _ in whitened], [Lk @ Lt for _, Lt in whitened])
        if q_steps:
            value = QUpdater(model, lambda: _value(model)).optimise(max_steps=int(q_steps))
        else:
            value = model.elbo()
    except (np.linalg.LinAlgError, FloatingPointError) as err:
        model.set_parameters(**before)
        raise ValueError(f"patch: the inducing patches cannot be used ({err})") from None
    return float(value)


def _value(model):
    try:
        value = float(model.elbo())
    except (np.linalg.LinAlgError, FloatingPointError, ValueError):
        return np.nan
    return value if np.isfinite(value) else np.nan


def feature_parameter(model):
    """The model's parameter name of the inducing patches Z ("feature0.Z", or "feature.Z" when shared)."""
    return "feature.Z" if model.shared else "feature0.Z"


def read_off(model, X_test, y_test, image=0, latent=0, elbo=None):
    """Everything the lab draws from a model at once, on one BLAS thread: {"elbo", "p" [N*, C]
    (class probabilities of the test images), "f_mean" [N*] (E_q[f] there), "error_rate", "tiles", "contributions" (of test
    image ``image``), "bar" (:func:`bar_response`), "weights"}. The test images and the bars are
    predicted as one batch: the kernel caches its sums per batch of images, a few batches at a time.
    ``elbo``: the model's ELBO when the caller has it (else it is evaluated)."""
    kernel, _ = convolutional_part(model)
    X_test = kernel.layout.check(X_test, "X_test")
    if not 0 <= int(image) < len(X_test):
        raise ValueError(f"image must be from 0 to {len(X_test) - 1}; got {image!r}")
    bars, touched = _bars(kernel.layout)
    with _threads.single_threaded():
        everything = np.vstack([X_test, bars])
        p = model.predict_class_probabilities(everything)
        f_mean, f_var = model.predict_f(everything)  # the same batch: its sums are cached
        j, n = _latent(model, latent), len(X_test)
        mean, var = f_mean[n:], f_var[n:]
        out = {"elbo": float(model.elbo() if elbo is None else elbo), "p": p[:n], "f_mean": f_mean[:n, j],
               "error_rate": float(np.mean(np.argmax(p[:len(X_test)], axis=1) != np.asarray(y_test).astype(int))),
               "tiles": inducing_tiles(model, latent), "contributions": contributions(model, X_test[int(image)], latent),
               "bar": {"column": np.arange(len(bars)), "mean": mean[:, j], "sd": np.sqrt(np.maximum(var[:, j], 0.0)),
                       "patches": touched.copy()},
               "weights": weights_image(kernel)}
    return out


def pool_images(X, side, factor):
    """Average-pool square images (rows of X, side x side, one channel) by factor x factor blocks."""
    X = np.asarray(X, dtype=float)
    if isinstance(factor, bool) or not isinstance(factor, (int, np.integer)) or factor < 1 or side % factor:
        raise ValueError(f"pool factor must be a positive integer dividing the image side {side}; got {factor!r}")
    if X.ndim != 2 or X.shape[1] != side * side:
        raise ValueError(f"X must hold one {side}x{side} image per row; got shape {X.shape}")
    s = side // factor
    return X.reshape(len(X), s, factor, s, factor).mean(axis=(2, 4)).reshape(len(X), s * s)


def centre_by_mass(image, side):
    """``image`` (side x side, flattened) shifted by whole pixels so that its centre of mass is
    at the centre, as MNIST's digits are; a blank image is returned as it is."""
    img = np.asarray(image, dtype=float).reshape(side, side)
    total = img.sum()
    if not np.isfinite(total) or total <= 0:
        return img.reshape(-1).copy()
    rows, cols = np.indices(img.shape)
    shift = [int(round((side - 1) / 2 - float((img * a).sum() / total))) for a in (rows, cols)]
    out = np.zeros_like(img)
    (dr, dc) = shift
    src_r, dst_r = slice(max(0, -dr), min(side, side - dr)), slice(max(0, dr), min(side, side + dr))
    src_c, dst_c = slice(max(0, -dc), min(side, side - dc)), slice(max(0, dc), min(side, side + dc))
    out[dst_r, dst_c] = img[src_r, src_c]
    return out.reshape(-1)
