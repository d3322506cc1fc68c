"""Input validation shared by every model: the names it had before the layer became the
package :mod:`gpexplorer.validation` (data arrays, prediction inputs, positive values)."""

from gpexplorer.validation import positive, prediction_inputs, validate_data

__all__ = ["positive", "prediction_inputs", "validate_data"]
