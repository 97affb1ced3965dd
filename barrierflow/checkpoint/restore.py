"""What one operator subtask restores: the driver assigns it, the task reads it.

Performs no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from barrierflow.checkpoint.metadata import KeyedStateHandle, StreamHandle


@dataclass(frozen=True)
class OperatorRestore:
    """The state an operator subtask restores: every old subtask's operator state, the keyed
    state handles that intersect its key-group range, and, for the first operator of a chain,
    every old subtask's channel state (each new subtask takes its share of it)."""

    operator_states: list[StreamHandle | None]  # indexed by old subtask
    keyed_state: list[KeyedStateHandle]
    channel_states: Sequence[tuple[int, StreamHandle]] = ()  # (old subtask, handle)
