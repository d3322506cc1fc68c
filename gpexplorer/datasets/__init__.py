"""Dataset registry and validated loaders for user data.

Registry (``DATASETS``; use ``load(name, **kwargs)``):

* ``"snelson"``     -- 200-point 1-D SPGP data of Snelson & Ghahramani (2006), taken from
  GPflux ``tests/snelson1d.npz`` (Apache-2.0); ``assets/snelson1d.csv``, file row order kept.
* ``"snelson100"``  -- fixed 100-point subset of ``"snelson"`` (van der Wilk, PhD thesis, 2019,
  sections 3.2.1 and 3.2.6); indices ``sort(default_rng(0).choice(200, 100, replace=False))``.
* ``"mcycle"``      -- R ``MASS::mcycle`` motorcycle-crash data (Silverman, 1985), 133 rows,
  heteroscedastic; raw units unless ``standardize=True``.
* ``"synthetic1d"`` -- seeded ``sin(3x) + 0.3 cos(7x)`` plus Gaussian noise, with a test set.
* ``"thesis4d"``    -- van der Wilk's thesis section 3.2.4 4-D problem: 1024 train + 1024 test
  inputs from N(0, I_4), f drawn jointly from an SE-kernel GP (l = 1.5, s_f = 1), noise 0.01.
* ``"usps_3vs5"``   -- USPS digits '3' vs '5' (GPML section 3.7.3; EGP paper section 4.2): 767
  train + 773 test 16x16 images, 256 features in [-1, 1]; ``assets/usps_3vs5.csv``.
* ``"toy_inversion"`` -- EGP paper section 4.1's toy inversion problem: latent f from a GP, y = g(f)
  + noise for a forward model g (``forward="sin"`` by default); a :class:`ToyData` keeps f.
* ``"coal_mining"``   -- the 191 coal-mining disasters (Jarrett 1979) counted in bins (SAVIGP's
  811 bins of 50 days by default, or ``n_bins`` over a ``span`` of years).
* ``"breast_cancer"`` -- Wisconsin diagnostic, 569 x 30, y = 1 benign (the SAVIGP paper's stand-in).
* ``"boston"``, ``"abalone"``, ``"mnist5k"`` -- the SAVIGP sweeps' tables and MNIST subset.
* ``"toy_binary"``, ``"toy_gaussian"`` -- the black-box lab's seeded 1-D toys (labels, regression).

Images for the convolutional GPs (thesis ch. 5; rows [N, H*W*C] in [0, 1], channels last; ``meta``
says ``synthetic`` and ``substitute_for``):

* ``"rectangles"``      -- *synthetic* 28x28 rectangle outlines, tall vs wide, 1200 train / 2000 test
  (in the style of Larochelle et al. 2007, whose set is not available offline).
* ``"mnist01"``         -- MNIST 0 vs 1 from ``assets/mnist_5k.npz`` (1000 images), seeded stratified
  split (800 / 200 by default); a subset standing in for the thesis' full MNIST.
* ``"mnist10"``         -- all 5000 images of ``mnist_5k.npz``, 10 classes, 4000 / 1000 by default.
* ``"fashion_mnist5k"`` -- Fashion-MNIST (Zalando, MIT), a fixed class-balanced 4000 / 1000 subset.
* ``"colour_patches"``  -- *synthetic* 10x10 RGB images labelled by a red-and-green conjunction that
  no single channel reveals (the stand-in for the thesis' CIFAR-10 colour-kernel comparison).

User data enter through :func:`from_arrays` and :func:`from_csv`; both raise ``ValueError``
with a message meant to be shown to the person who supplied the data.
"""

from gpexplorer.datasets.arrays import Dataset, assets_dir, data_file, from_arrays
from gpexplorer.datasets.bundled import DATASETS, load, mcycle, snelson, snelson100, synthetic1d, thesis4d, usps_3vs5
from gpexplorer.datasets.csv_files import from_csv
from gpexplorer.datasets.images import (colour_patches, fashion_mnist5k, make_fashion_subset, mnist01, mnist10,
                                        rectangles)
from gpexplorer.datasets.tables import abalone, boston, breast_cancer, coal_mining, mnist5k
from gpexplorer.datasets.toy_inversion import ToyData, toy_inversion
from gpexplorer.datasets.toys import toy_binary, toy_gaussian

__all__ = ["Dataset", "DATASETS", "load", "from_arrays", "from_csv", "assets_dir", "data_file",
           "snelson", "snelson100", "mcycle", "synthetic1d", "thesis4d", "usps_3vs5", "toy_inversion", "ToyData",
           "coal_mining", "breast_cancer", "boston", "abalone", "mnist5k", "toy_binary", "toy_gaussian",
           "rectangles", "mnist01", "mnist10", "fashion_mnist5k", "colour_patches", "make_fashion_subset"]
