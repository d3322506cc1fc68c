"""Random-feature bases (Rahimi & Recht): random Fourier features of stationary kernels."""

from gpexplorer.random_features.fourier import RandomFourierFeatures, base_frequencies, kernel_name

__all__ = ["RandomFourierFeatures", "base_frequencies", "kernel_name"]
