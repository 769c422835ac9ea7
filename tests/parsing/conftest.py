"""Hypothesis profiles for the parser property tests.

HYPOTHESIS_PROFILE=ci runs 10,000 examples per property (the acceptance bar for "never
raises" and "any chunking gives the same events"); unset, the default profile keeps a
local run quick. The profile is global to the pytest session, as profiles are.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=10_000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.register_profile("dev", max_examples=200, deadline=None)

if os.environ.get("HYPOTHESIS_PROFILE"):
    settings.load_profile(os.environ["HYPOTHESIS_PROFILE"])
