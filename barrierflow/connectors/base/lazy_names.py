"""Deprecated: ``LazyNames`` lived here. It is in ``barrierflow.lazy_names`` now, beside the
moved names of the deprecated faces; the old path warns and gives it for one release."""

from __future__ import annotations

from typing import Any

from barrierflow.lazy_names import MovedNames

_MOVED = MovedNames(__name__, {"LazyNames": "barrierflow.lazy_names.LazyNames"})

__all__ = _MOVED.names()


def __getattr__(name: str) -> Any:
    return _MOVED.get(name)
