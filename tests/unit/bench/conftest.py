"""The campaign runner's modules live in ``bench/`` and import each other by their top-level
names (``bench/chaos.py`` puts its directory on the path); the tests do the same, at the end
of the path, so that no bench module shadows another module."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = str(Path(__file__).resolve().parents[3] / "bench")
if BENCH not in sys.path:
    sys.path.append(BENCH)
