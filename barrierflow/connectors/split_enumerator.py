"""The split enumerator interface's public path (``interfaces/split_enumerator.py`` defines
it). Performs no I/O."""

from barrierflow.connectors.interfaces.split_enumerator import (
    Split,
    SplitEnumerator,
    SplitEnumeratorContext,
)

__all__ = ["Split", "SplitEnumerator", "SplitEnumeratorContext"]
