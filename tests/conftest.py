"""Shared test settings: hypothesis without deadlines (first calls compile kernels)."""
import os

from hypothesis import HealthCheck, settings

settings.register_profile("clgrad", deadline=None, max_examples=int(os.environ.get(
    "CLGRAD_HYPOTHESIS_EXAMPLES", "40")), suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("clgrad")
