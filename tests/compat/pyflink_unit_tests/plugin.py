"""The pytest plugin of the run: marks each excluded test skipped with its reason, which the
run reads back from the JUnit report (``excluded: REASON``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

EXCLUDED = "excluded: "


def pytest_collection_modifyitems(config, items) -> None:
    path = os.environ.get("PYFLINK_UNIT_TESTS_EXCLUSIONS")
    if not path:
        return
    exclusions = json.loads(Path(path).read_text())
    for item in items:
        module = getattr(item, "module", None)
        function = getattr(item, "function", None)
        if module is None or function is None:
            continue
        defined_in = function.__qualname__.split(".")[0]
        reason = exclusions.get(module.__name__, {}).get(f"{defined_in}.{function.__name__}")
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=EXCLUDED + reason))
