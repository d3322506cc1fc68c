"""Named model parameters: the flat dict every model exposes and the optimisers work on."""

from __future__ import annotations

from gpexplorer._checks import positive

NOISE = "noise_variance"


def sum_gradients(*dicts):
    out = {}
    for d in dicts:
        for k, v in d.items():
            out[k] = out[k] + v if k in out else v
    return out


class KernelAndNoise:
    """``parameters`` / ``set_parameters`` of a model with a ``kernel`` and a scalar ``noise_variance``
    (the flat dict the optimisers and the dashboards work with)."""

    @property
    def parameters(self) -> dict:
        p = dict(self.kernel.params)
        p[NOISE] = self.noise_variance
        return p

    def set_parameters(self, params: dict, validate=True):
        """Assign parameters by name; ``validate=False`` is for the optimiser's own values."""
        params = dict(params)
        if NOISE in params:
            value = params.pop(NOISE)
            self.noise_variance = positive(NOISE, value, allow_array=False) if validate else float(value)
        if params:
            if validate:
                self.kernel.set_params(**params)
            else:
                self.kernel.assign_unchecked(params)
        return self
