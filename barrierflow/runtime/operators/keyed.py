"""The keyed operators: keyed state and timers for a key group range (``KeyedOperator``, what
the window and the keyed two-input operators build on too), and ``process`` on a keyed stream
(``KeyedProcessOperator``), whose hot loop is the record path of every keyed job.

**Threading:** the task thread only, except the keyed snapshot's asynchronous phase
(background). **Lifecycle:** ``open`` makes the backend and restores it, timers included,
before the user's ``open``; ``close`` disposes of it, and removes the local recovery copy once
a checkpoint completed after the end of input.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from typing import Any

from barrierflow.datastream.functions.one_input import (
    KeyedProcessFunction,
    RuntimeContext,
    TimeDomain,
)
from barrierflow.protocol.checkpoint_barrier import CheckpointOptions
from barrierflow.protocol.key_group_range import key_group_range_for_subtask
from barrierflow.protocol.record_batch import RecordBatch, repeat_per_output
from barrierflow.runtime.operators.key_group_check import KeyGroupCheck
from barrierflow.runtime.operators.stream_operator import (
    Operator,
    OperatorContext,
    OperatorSnapshot,
    UserFunctionError,
)
from barrierflow.runtime.timer_service import InternalTimerService
from barrierflow.state.backends import create_keyed_state_backend
from barrierflow.state.key_groups import as_key, unwrapped
from barrierflow.state.keyed_state_store import KeyedStateStore


class KeyedOperator(Operator):
    """An operator with keyed state and timers: its key groups' state in the configured
    backend, restored (timers included) before the user's ``open`` sees it."""

    uses_event_time = True
    has_timers = True

    def open_keyed(self, ctx: OperatorContext) -> None:
        self._where = f"operator {self.uid!r} ({self.name}), subtask {ctx.subtask}"
        self.open_dead_letters(ctx)
        kg_range = key_group_range_for_subtask(ctx.max_parallelism, ctx.parallelism, ctx.subtask)
        # reinterpreted as keyed: each record's key group checked (key_group_check.py)
        self.key_group_check = (
            KeyGroupCheck(ctx.subtask, ctx.parallelism, ctx.max_parallelism, kg_range)
            if self.spec.checks_key_groups
            else None
        )
        self.backend = create_keyed_state_backend(
            ctx.state_backend, ctx.max_parallelism, kg_range, ctx.local_dir, ctx.recovery_dir
        )
        self._recovery_dir = ctx.recovery_dir
        self._input_ended = False
        self._completed_after_end = False
        self.timers = InternalTimerService(self.backend, ctx.max_parallelism)
        if ctx.restore is not None:
            self.backend.restore(ctx.restore.keyed_state, ctx.restore_streams)
            self.timers.restore()

    def checked_key_selector(self) -> Callable[[Any], Any]:
        """The key selector (of input 1), which checks each key's key group where the input
        was reinterpreted as keyed."""
        select = self.spec.key_selector
        assert select is not None  # a keyed operator's spec has it
        check = self.key_group_check
        return select if check is None else check.checked(select)

    def runtime_context(self, ctx: OperatorContext) -> RuntimeContext:
        """The user functions' context: the keyed state of this subtask."""
        store = KeyedStateStore(self.backend, where=self._where)
        return ctx.runtime_context(self.name, store)

    def snapshot_state(self, checkpoint_id: int, options: CheckpointOptions) -> OperatorSnapshot:
        return OperatorSnapshot(None, self.backend.snapshot(checkpoint_id, options))

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self.backend.notify_checkpoint_complete(checkpoint_id)
        self._completed_after_end = self._input_ended

    def notify_checkpoint_aborted(
        self, checkpoint_id: int, references_released: bool = False
    ) -> None:
        self.backend.notify_checkpoint_aborted(checkpoint_id, references_released)

    def finish(self) -> RecordBatch | None:
        self._input_ended = True
        return None

    def close(self) -> None:
        super().close()
        self.backend.dispose()
        if self._completed_after_end and self._recovery_dir:
            # A checkpoint completed after this subtask's input ended, so the job is ending
            # normally: a restart, should one come, can download what it needs.
            shutil.rmtree(self._recovery_dir, ignore_errors=True)


class KeyedProcessOperator(KeyedOperator):
    def open(self, ctx: OperatorContext) -> None:
        self.open_keyed(ctx)
        fn: KeyedProcessFunction = self.spec.function
        side_outputs = self.spec.side_outputs
        self._ctx = KeyedProcessFunction.Context(
            self.backend.key_context, self.timers, side_outputs
        )
        self._timer_ctx = KeyedProcessFunction.OnTimerContext(
            self.backend.key_context, self.timers, side_outputs
        )
        self._on_timer = getattr(fn, "on_timer", None)
        # barrierflow's own reductions yield no side outputs: they skip the look for them
        self._tags = getattr(fn, "yields_side_outputs", True)
        fn.open(self.runtime_context(ctx))

    def _process_all(self, batch: RecordBatch) -> RecordBatch:
        fn, select = self.spec.function, self.spec.key_selector
        assert select is not None  # a keyed operator's spec has it
        check = self.key_group_check
        if check is None:
            select = unwrapped(select)  # a list is made a key in the loop
        return self._process_keyed(batch, select, fn.process_element, self._ctx, check)

    def _process_keyed(
        self,
        batch: RecordBatch,
        select: Callable[[Any], Any],
        process: Callable[[Any, Any], Any],
        ctx: Any,
        check: KeyGroupCheck | None = None,
    ) -> RecordBatch:
        """``process(record, ctx)`` for each record, with its key (by ``select``) current (a
        two-input operator's per input); ``check``: each key's key group checked first."""
        key_context = self.backend.key_context
        timestamps = batch.timestamps
        out: list[Any] = []
        extend = out.extend
        ends: list[int] = []
        record = None
        try:
            if timestamps is None and check is None:  # the hot loop of keyed jobs
                for record in batch.values:
                    key = select(record)  # a list is made a key here (``unwrapped``)
                    key_context.key = key if key.__class__ is not list else as_key(key)
                    result = process(record, ctx)
                    if result is not None:
                        extend(result)
            elif timestamps is None:  # reinterpreted as keyed: one set lookup more
                assert check is not None  # (None took the loop above)
                owned, admit = check.owned, check.admit
                for record in batch.values:
                    key = select(record)
                    if key not in owned:
                        admit(key)
                    key_context.key = key
                    result = process(record, ctx)
                    if result is not None:
                        extend(result)
            else:
                if check is not None:
                    select = check.checked(select)
                mark = ends.append
                for record, ctx._timestamp in zip(batch.values, timestamps, strict=True):
                    key = select(record)
                    key_context.key = key if key.__class__ is not list else as_key(key)
                    result = process(record, ctx)
                    if result is not None:
                        extend(result)
                    mark(len(out))
        except Exception as e:
            raise self.failure(record, e, _key_of(select, record)) from e
        if not self._tags and not ctx._side:
            if timestamps is None:
                return RecordBatch(out)
            return RecordBatch(out, repeat_per_output(timestamps, ends))
        return self._finished_batch(ctx, out, timestamps, ends)

    def on_watermark(self, watermark: int) -> RecordBatch | None:
        if watermark <= self.timers.watermark:
            return None
        return self._fire(self.timers.advance_watermark(watermark), TimeDomain.EVENT_TIME)

    def on_processing_time(self, now_ms: int) -> RecordBatch | None:
        due = self.timers.next_processing_time()
        if due is None or due > now_ms:
            return None
        return self._fire(self.timers.fire_processing_time(now_ms), TimeDomain.PROCESSING_TIME)

    def _fire(self, timers, domain: TimeDomain) -> RecordBatch:
        """Calls ``on_timer`` for each due timer; event-time outputs carry the timer's time,
        processing-time outputs none."""
        ctx = self._timer_ctx
        ctx._time_domain = domain
        on_timer = self._on_timer
        event_time = domain is TimeDomain.EVENT_TIME
        out: list[Any] = []
        ends: list[int] = []
        stamps: list[int] = []
        # A failure of the timer service itself (its state) is not the function's: only
        # what runs for a timer is wrapped, naming that timer.
        for timer in timers:
            try:
                ctx._timestamp = timer.timestamp
                result = on_timer(timer.timestamp, ctx) if on_timer is not None else None
                if result is not None:
                    out.extend(result)
                ends.append(len(out))
                stamps.append(timer.timestamp)
            except Exception as e:
                raise UserFunctionError(
                    f"{self._where} failed in on_timer({timer.timestamp}) "
                    f"({domain.name.lower().replace('_', ' ')} timer) of key {timer.key!r:.100}: "
                    f"{type(e).__name__}: {e}"
                ) from e
        return self._finished_batch(ctx, out, stamps if event_time else None, ends)


def _key_of(select: Callable[[Any], Any], record: Any) -> Any:
    """``record``'s key, for the error it failed with; None where the key selector is what
    failed (the key current then is the record's before it: a stream reinterpreted as keyed
    runs the selector first in this operator)."""
    try:
        return select(record)
    except Exception:  # noqa: BLE001 - the first failure is the one reported
        return None
