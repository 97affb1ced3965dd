"""Where earlier versions defined ``Row``; it lives in ``barrierflow.common.types`` now, at
PyFlink's path. Kept because state that earlier versions pickled (an untyped state holding rows)
names this module, and must still restore. New code imports ``Row`` from
``barrierflow.common``."""

from barrierflow.common.types import Row, RowKind

__all__ = ["Row", "RowKind"]
