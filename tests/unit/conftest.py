"""Unit tests: pure state machines and small file operations, each in milliseconds."""

import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.configuration import set_hypothesis_home_dir

from barrierflow.checkpoint import storage_retry

# Hypothesis caches constants under ./.hypothesis even without an example database: keep the
# working tree clean.
set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "barrierflow-unit-hypothesis")

# No example database on disk (unit tests leave no files behind) and no per-example deadline
# (a loaded CI machine must not turn a slow example into a failure).
settings.register_profile(
    "unit",
    database=None,
    deadline=None,
    max_examples=100,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("unit")


@pytest.fixture
def slept(monkeypatch):
    """The storage retries' waits, taking no time. ``time.sleep`` itself stays as it is: other
    threads' waits would land in the list too (a test failed so in CI)."""
    waits: list[float] = []
    monkeypatch.setattr(storage_retry, "time", SimpleNamespace(sleep=waits.append))
    return waits
