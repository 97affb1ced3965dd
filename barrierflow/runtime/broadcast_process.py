"""The operator of ``stream.connect(broadcast_stream).process(...)``: a (keyed or not)
process operator whose second input is a broadcast stream, with broadcast state.

Both inputs reach it as one stream of tagged records, ``(0, record)`` from the stream and
``(1, record)`` from the broadcast stream (tagged by the map the API chains to each input),
so barrier alignment, watermarks and keyed state are the process operators' own. The user's
function is wrapped in a dispatcher that calls ``process_element`` with the broadcast state
read-only and ``process_broadcast_element`` with it writable; the broadcast state is the
operator state of the snapshot.

**Threading:** the task thread only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any, NamedTuple

from barrierflow.protocol.checkpoint_barrier import CheckpointOptions
from barrierflow.runtime.operators import (
    KeyedProcessOperator,
    OperatorContext,
    OperatorSnapshot,
    ProcessOperator,
)
from barrierflow.state.broadcast_state import BroadcastStateStore
from barrierflow.two_input_functions import Delegating


class BroadcastProcess(NamedTuple):
    """What the API records: the user's function and the broadcast states it declared."""

    function: Any
    state_names: tuple[str, ...]


class _BroadcastContext:
    """A process function's context with ``get_broadcast_state``: read-only or writable."""

    def __init__(self, inner: Any, store: BroadcastStateStore, writable: bool) -> None:
        self._inner = inner
        self._store = store
        self._writable = writable

    def get_broadcast_state(self, descriptor: Any) -> Any:
        store = self._store
        return store.state(descriptor) if self._writable else store.read_only(descriptor)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Dispatch(Delegating):
    """Calls the user's method for the input a tagged record came from."""

    def __init__(self, fn: Any, store: BroadcastStateStore) -> None:
        super().__init__(fn)
        self._store = store
        self._contexts: tuple[Any, Any, Any] | None = None  # of the operator's one context

    def process_element(self, tagged: tuple[int, Any], ctx: Any) -> Iterable[Any] | None:
        contexts = self._contexts
        if contexts is None or contexts[0] is not ctx:
            contexts = self._contexts = (
                ctx,
                _BroadcastContext(ctx, self._store, writable=False),
                _BroadcastContext(ctx, self._store, writable=True),
            )
        side, value = tagged
        if side == 0:
            return self._fn.process_element(value, contexts[1])
        return self._fn.process_broadcast_element(value, contexts[2])

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Any] | None:
        on_timer = getattr(self._fn, "on_timer", None)
        if on_timer is None:
            return None
        return on_timer(timestamp, _BroadcastContext(ctx, self._store, writable=False))


def _opened_with_dispatch(op: Any, ctx: OperatorContext) -> None:
    recorded: BroadcastProcess = op.spec.function
    op.broadcast_state = BroadcastStateStore(recorded.state_names)
    if ctx.restore is not None:
        read = ctx.restore_streams.read
        op.broadcast_state.restore(
            [read(h) if h is not None else None for h in ctx.restore.operator_states],
            ctx.subtask,
            ctx.parallelism,
        )
    op.spec = dataclasses.replace(
        op.spec, function=_Dispatch(recorded.function, op.broadcast_state)
    )


class BroadcastProcessOperator(ProcessOperator):
    """``stream.connect(broadcast_stream).process(BroadcastProcessFunction)``."""

    def open(self, ctx: OperatorContext) -> None:
        _opened_with_dispatch(self, ctx)
        super().open(ctx)

    def snapshot_state(self, checkpoint_id: int, options: CheckpointOptions) -> OperatorSnapshot:
        return OperatorSnapshot(self.broadcast_state.snapshot(), None)


class KeyedBroadcastProcessOperator(KeyedProcessOperator):
    """``keyed.connect(broadcast_stream).process(KeyedBroadcastProcessFunction)``."""

    def open(self, ctx: OperatorContext) -> None:
        _opened_with_dispatch(self, ctx)
        super().open(ctx)

    def snapshot_state(self, checkpoint_id: int, options: CheckpointOptions) -> OperatorSnapshot:
        keyed = super().snapshot_state(checkpoint_id, options)
        return OperatorSnapshot(self.broadcast_state.snapshot(), keyed.keyed)
