"""The operator of ``stream.connect(broadcast_stream).process(...)``: a (keyed or not) two-input
process operator whose second input is a broadcast stream, with broadcast state.

Input 1 (the stream) reaches ``process_element`` with the broadcast state read-only, input 2
(the broadcast stream, every record in every subtask) reaches ``process_broadcast_element``
with it writable; each has a context of its own that offers ``get_broadcast_state``. Keyed,
input 1 is keyed by the stream's key selector and a broadcast record has no key (as in Flink,
it is not one key's). The broadcast state is the operator state of the snapshot: every subtask
holds the same, and a restore at any parallelism gives each new subtask one old subtask's copy.

**Threading:** the task thread only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from barrierflow.datastream.functions.one_input import KeyedProcessFunction
from barrierflow.datastream.functions.two_input import BroadcastProcess
from barrierflow.protocol.checkpoint_barrier import CheckpointOptions
from barrierflow.runtime.co_process import CoProcessOperator, KeyedCoProcessOperator
from barrierflow.runtime.operators import OperatorContext, OperatorSnapshot
from barrierflow.state.broadcast_state import BroadcastStateStore


# PyFlink's names of the contexts are class attributes, not type aliases, to a type checker
class _ElementContext(KeyedProcessFunction.Context):  # type: ignore[valid-type, misc]
    """A record's context with ``get_broadcast_state``: read-only or writable."""

    __slots__ = ("_broadcast_state",)

    def get_broadcast_state(self, descriptor: Any) -> Any:
        return self._broadcast_state(descriptor)


class _OnTimerContext(KeyedProcessFunction.OnTimerContext):  # type: ignore[valid-type, misc]
    """A timer's context with ``get_broadcast_state``, read-only."""

    __slots__ = ("_broadcast_state",)

    def get_broadcast_state(self, descriptor: Any) -> Any:
        return self._broadcast_state(descriptor)


def _with_state(context: Any, access: Callable[[Any], Any]) -> Any:
    context._broadcast_state = access
    return context


def _open_broadcast_state(ctx: OperatorContext, function: BroadcastProcess) -> BroadcastStateStore:
    store = BroadcastStateStore(function.state_names)
    if ctx.restore is not None:
        read = ctx.restore_streams.read
        store.restore(
            [read(h) if h is not None else None for h in ctx.restore.operator_states],
            ctx.subtask,
            ctx.parallelism,
        )
    return store


class BroadcastProcessOperator(CoProcessOperator):
    """``stream.connect(broadcast_stream).process(BroadcastProcessFunction)``."""

    def open(self, ctx: OperatorContext) -> None:
        store = self.broadcast_state = _open_broadcast_state(ctx, self.spec.function)
        super().open(ctx)
        side_outputs = self.spec.side_outputs
        self._ctx = _with_state(_ElementContext(None, None, side_outputs), store.read_only)
        self._ctx2 = _with_state(_ElementContext(None, None, side_outputs), store.state)

    def snapshot_state(self, checkpoint_id: int, options: CheckpointOptions) -> OperatorSnapshot:
        return OperatorSnapshot(self.broadcast_state.snapshot(), None)


class KeyedBroadcastProcessOperator(KeyedCoProcessOperator):
    """``keyed.connect(broadcast_stream).process(KeyedBroadcastProcessFunction)``."""

    def open(self, ctx: OperatorContext) -> None:
        store = self.broadcast_state = _open_broadcast_state(ctx, self.spec.function)
        super().open(ctx)
        self._select2 = _no_key
        keys, timers, side_outputs = self.backend.key_context, self.timers, self.spec.side_outputs
        self._ctx = _with_state(_ElementContext(keys, timers, side_outputs), store.read_only)
        self._ctx2 = _with_state(_ElementContext(keys, timers, side_outputs), store.state)
        self._timer_ctx = _with_state(_OnTimerContext(keys, timers, side_outputs), store.read_only)

    def snapshot_state(self, checkpoint_id: int, options: CheckpointOptions) -> OperatorSnapshot:
        keyed = super().snapshot_state(checkpoint_id, options)
        return OperatorSnapshot(self.broadcast_state.snapshot(), keyed.keyed)


def _no_key(record: Any) -> None:
    """A broadcast record's key: none."""
    return None
