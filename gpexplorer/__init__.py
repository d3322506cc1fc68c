"""gpexplorer: approximate Gaussian-process inference you can see, touch and trust."""

from gpexplorer import datasets, kernels, metrics, models

__all__ = ["datasets", "kernels", "metrics", "models"]
__version__ = "0.1.0"
