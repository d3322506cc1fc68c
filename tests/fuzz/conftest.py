"""The fuzz suite's settings: a quick form in CI and the README's test run, a full form on request.

``GPX_FUZZ=full python -m pytest tests/fuzz`` runs each property with many more examples; the
default (quick) profile keeps the whole suite to a couple of minutes. Deadlines are off: a
first call may compile numba code, and a hang is caught by the child-process timeout instead.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile("quick", max_examples=25, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("full", max_examples=400, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("GPX_FUZZ", "quick"))
