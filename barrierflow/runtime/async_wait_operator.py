"""The async I/O operator (Flink's ``AsyncWaitOperator``): an ``AsyncFunction``'s coroutine per
record, up to ``capacity`` of them at once, on an asyncio event loop of the subtask.

A batch's records enter the ``ElementQueue`` and as many start as the capacity allows; the
operator returns nothing from ``process_batch``. Each call completes on the event loop's thread,
which hands the result to the task thread through a queue and, once until the task took it,
a mail (``OperatorContext.output_ready``); the chain then asks ``take_completed`` for what may
be emitted (``async_element_queue.py`` says in which order) and runs it through the rest of the
chain. While the queue holds ``capacity`` records the operator is ``full``: the chain reports
itself backlogged and the task takes no input (back-pressure), but it keeps running mails,
checkpoint triggers and priority barriers. A watermark waits in the queue behind the records
that arrived before it and leaves through ``take_completed``; the end of time (the end of
input) and ``finish`` wait for every call.

Checkpoints (docs/adr/0017-async-io-checkpoints.md): every record not emitted yet, started or
not, goes into the operator's list state with its timestamp (as a one-record buffer), and a
restored subtask starts their calls again; outputs emitted before the barrier are not in the
state, so nothing reaches an exactly-once sink twice. The list state is split on rescale.

A call that raises is retried as the ``AsyncRetryStrategy`` says, within the timeout; a call
still running at the timeout is cancelled and ``timeout(value)`` gives its outputs. A failure
(or ``timeout``'s default ``TimeoutError``) fails the task, naming the operator and the record.
The function has no keyed state, even after ``key_by``, as in Flink.

**Threading:** ``async_invoke``, the retry predicates and ``timeout`` run on the operator's
event loop thread; everything else, ``open`` and ``close`` included, on the task thread.
**Lifecycle:** ``open`` starts the event loop (and the restored calls); ``close`` cancels what
still runs and stops it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterable
from queue import Empty, SimpleQueue
from typing import Any

from barrierflow.datastream.functions.async_io import AsyncFunctionDescriptor
from barrierflow.eventtime.durations import millis_of
from barrierflow.eventtime.watermark_valve import MAX_WATERMARK
from barrierflow.protocol.buffer_codec import BufferEncoder, decode_buffer
from barrierflow.protocol.checkpoint_barrier import CheckpointOptions
from barrierflow.protocol.record_batch import EMPTY, RecordBatch
from barrierflow.runtime.async_element_queue import Element, ElementQueue, OutputOrder
from barrierflow.runtime.operators import (
    Operator,
    OperatorContext,
    OperatorSnapshot,
    UserFunctionError,
    restore_operator_state,
)
from barrierflow.state.operator_state import OperatorStateStore

IN_FLIGHT = "in-flight"  # the list state of records not emitted at a checkpoint
_WAIT_S = 0.5  # how long the task thread waits for a completion before it looks again


class _EventLoop:
    """An asyncio event loop on a daemon thread of its own."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=f"async I/O {name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        loop = self.loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
            # Stopped: the calls still running are cancelled and given a turn to end.
            tasks = asyncio.all_tasks(loop)
            for task in tasks:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        finally:
            loop.close()

    def call(self, fn: Callable[..., Any], *args: Any) -> None:
        self.loop.call_soon_threadsafe(fn, *args)

    def stop(self) -> None:
        """Cancels every call still running, stops the loop and waits for its thread."""
        if not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=5)


def _outputs_of(result: Any, function: Any) -> list[Any]:
    """The outputs of a call; PyFlink's errors (its words, which programs may match) for a
    result that is none or not a list, with what to return instead."""
    if result is None or not isinstance(result, Iterable):
        what = "cannot be none" if result is None else "should be of list type"
        raise RuntimeError(
            f"The result of AsyncFunction {what}, please check the methods 'async_invoke' "
            f"and 'timeout' of class '{type(function).__name__}' (it returned "
            f"{type(result).__name__}: return a list, [] for none, [value] for one)"
        )
    return list(result)


class AsyncWaitOperator(Operator):
    emits_asynchronously = True  # outputs leave through take_completed
    holds_watermarks = True  # a watermark leaves through take_completed, behind its records

    def open(self, ctx: OperatorContext) -> None:
        self._where = f"operator {self.uid!r} ({self.name}), subtask {ctx.subtask}"
        descriptor: AsyncFunctionDescriptor = self.spec.function
        self._fn = descriptor.async_function
        timeout_ms = millis_of(descriptor.timeout, f"the timeout of {self._where}")
        self._timeout_s = timeout_ms / 1000 if timeout_ms > 0 else None
        self._strategy = descriptor.async_retry_strategy
        predicate = self._strategy.get_retry_predicate()
        self._retry_result = predicate.result_predicate()
        self._retry_error = predicate.exception_predicate()
        ordered = descriptor.output_mode is AsyncFunctionDescriptor.OutputMode.ORDERED
        self.queue = ElementQueue(
            descriptor.capacity, OutputOrder.ORDERED if ordered else OutputOrder.UNORDERED
        )
        self._completed: SimpleQueue[tuple[Element, list | None, BaseException | None]]
        self._completed = SimpleQueue()
        self._wake_pending = False
        self._output_ready = ctx.output_ready
        self._encoder = BufferEncoder(None)
        self._state = OperatorStateStore()
        self._fn.open(ctx.runtime_context(self.name))
        self._loop = _EventLoop(self._where)
        if ctx.restore is not None:
            restore_operator_state(self._state, ctx)
            for payload in self._state.get_list_state(IN_FLIGHT).get():
                batch = decode_buffer(payload)
                timestamp = None if batch.timestamps is None else batch.timestamps[0]
                self.queue.add_record(batch.values[0], timestamp)
            self._start_waiting()

    # --- records --------------------------------------------------------------------------------

    @property
    def full(self) -> bool:  # type: ignore[override]  # Operator's flag, read only
        return self.queue.full

    def process_batch(self, batch: RecordBatch) -> RecordBatch:
        add = self.queue.add_record
        timestamps = batch.timestamps
        if timestamps is None:
            for record in batch.values:
                add(record, None)
        else:
            for record, timestamp in zip(batch.values, timestamps, strict=True):
                add(record, timestamp)
        self._start_waiting()
        return EMPTY  # outputs leave through take_completed

    def on_watermark(self, watermark: int) -> RecordBatch | None:
        if watermark >= MAX_WATERMARK:  # the end of input: everything completes first
            return self._drain()
        self.queue.add_watermark(watermark)
        return None

    def take_completed(self) -> list[RecordBatch | int]:
        """What may be emitted now, in order (batches of outputs and watermarks); starts the
        records waiting for room."""
        self._absorb(block=False)
        items = self.queue.ready()
        self._start_waiting()
        return items

    def finish(self) -> RecordBatch | None:
        return self._drain()

    def _drain(self) -> RecordBatch:
        """Waits for every call; their outputs in order (watermarks still queued are passed
        over: the end of time follows them)."""
        out = EMPTY
        while True:
            for item in self.take_completed():
                if type(item) is RecordBatch:
                    out = out.concat(item)
            if not len(self.queue):
                return out
            self._absorb(block=True)

    # --- the event loop's side ------------------------------------------------------------------

    def _start_waiting(self) -> None:
        starting = self.queue.to_start()
        if starting:
            self._loop.call(self._start_calls, starting)

    def _start_calls(self, elements: list[Element]) -> None:
        """On the event loop: a task per record."""
        for element in elements:
            self._loop.loop.create_task(self._call(element))

    async def _call(self, element: Element) -> None:
        record = element.record
        try:
            attempts = asyncio.ensure_future(self._attempts(record))
            done, _ = await asyncio.wait({attempts}, timeout=self._timeout_s)
            if attempts in done:
                result = attempts.result()
            else:
                attempts.cancel()
                result = self._fn.timeout(record)
            self._completed.put((element, _outputs_of(result, self._fn), None))
        except asyncio.CancelledError:
            raise  # the operator closes
        except Exception as e:  # noqa: BLE001 - handed to the task thread, which raises it
            self._completed.put((element, None, e))
        if not self._wake_pending:
            self._wake_pending = True
            if self._output_ready is not None:
                self._output_ready()

    async def _attempts(self, record: Any) -> Any:
        """The calls for ``record``, retried while the strategy allows."""
        attempt = 1
        while True:
            try:
                result, error = await self._fn.async_invoke(record), None
            except Exception as e:  # noqa: BLE001 - retried or raised below
                result, error = None, e
            if error is None:
                retry = (
                    self._retry_result is not None
                    and result is not None
                    and (self._retry_result(result))
                )
            else:
                retry = self._retry_error is not None and self._retry_error(error)
            if not retry or not self._strategy.can_retry(attempt):
                if error is not None:
                    raise error
                return result
            await asyncio.sleep(self._strategy.get_backoff_time_millis(attempt) / 1000)
            attempt += 1

    # --- the task thread's side -----------------------------------------------------------------

    def _absorb(self, block: bool) -> None:
        """Completed calls into the queue; with ``block``, waits for one first. A failed call
        fails the task."""
        self._wake_pending = False  # before reading: a completion after it mails again
        if block:
            try:
                self._complete(*self._completed.get(timeout=_WAIT_S))
            except Empty:
                return
        while True:
            try:
                self._complete(*self._completed.get_nowait())
            except Empty:
                return

    def _complete(self, element: Element, outputs: list | None, error: BaseException | None):
        if error is not None:
            raise UserFunctionError(
                f"{self._where}: the async call failed on record "
                f"{element.record!r:.200}: {type(error).__name__}: {error}"
            ) from error
        assert outputs is not None  # a call that did not fail returned its outputs
        self.queue.complete(element, outputs)

    # --- checkpoints and lifecycle --------------------------------------------------------------

    def snapshot_state(self, checkpoint_id: int, options: CheckpointOptions) -> OperatorSnapshot:
        encode = self._encoder.encode
        self._state.get_list_state(IN_FLIGHT).update(
            [
                encode(RecordBatch([e.record], None if e.timestamp is None else [e.timestamp]))
                for e in self.queue.pending()
            ]
        )
        return OperatorSnapshot(self._state.snapshot(), None)

    def close(self) -> None:
        loop = getattr(self, "_loop", None)
        if loop is not None:
            loop.stop()
        self._fn.close()
