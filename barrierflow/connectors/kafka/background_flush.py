"""AT_LEAST_ONCE KafkaSink: what was produced before a barrier is flushed on a thread of the
writer's own, and the checkpoint is acknowledged once the brokers have all of it, so that the
task thread never waits for the brokers at a barrier
(docs/adr/0030-kafka-at-least-once-flush-off-the-task-thread.md).

Flink's ``KafkaWriter`` flushes its producer in ``prepareSnapshotPreBarrier``, on the task
thread. Here the barrier hands the flush over (``flush_at_barrier``) and the task goes on; the
snapshot's acknowledgement waits for the future it returns (``SinkWriter.flushing``): a
checkpoint completes only once every record produced before its barrier was acknowledged, as
in Flink. A failed delivery fails that checkpoint, every later flush, and the task at its next
write, so that no later checkpoint completes without those records.

One producer, used by one thread at a time: a flush waits for every record in the producer,
so while one runs the records the task writes are held here (at most ``HOLD_LIMIT``; past it
the task waits for the flush) and produced once it ended, before any later one, keeping each
partition's records in the order they were written. The flush of barrier N first produces
what was held since barrier N-1, so it covers everything written before its barrier.

**Threading:** ``send``, ``flush_at_barrier`` and ``close`` on the task thread; each flush on
the flush thread, which alone uses the producer while the flush runs. **I/O:** the producer.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from barrierflow.connectors.kafka.batch_produce import KeyValue, produce_all
from barrierflow.connectors.kafka.transactions import FLUSH_TIMEOUT_S, flush

HOLD_LIMIT = 100_000  # records held during a flush; librdkafka's own queue holds as many
CLOSE_WAIT_S = 10.0  # how long a close waits for the flush that runs

_Sent = tuple[Iterable[str], list[KeyValue], list[int] | None]  # topics, pairs, partitions


class BackgroundFlush:
    def __init__(self, producer: Any, failures: Callable[[], str | None], name: str) -> None:
        """``failures``: what went wrong with deliveries so far (the producer's delivery
        callback notes it), or None; ``name``: the flush thread's."""
        self._producer = producer
        self._failures = failures
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._flushing: Future[None] | None = None  # the last flush handed over
        self._unfinished: list[Future[None]] = []  # the flushes handed over, not done then
        self._held: list[_Sent] = []  # (topics, pairs, partitions) sent
        self._held_records = 0

    def send(
        self, topics: Iterable[str], pairs: list[KeyValue], partitions: list[int] | None = None
    ) -> None:
        """Produces ``pairs``, each to its topic (``topics``: a list, or one topic repeated)
        and partition (None: the client's choice), or holds them while a flush runs."""
        flushing = self._flushing
        if flushing is not None:
            if not flushing.done() and self._held_records < HOLD_LIMIT:
                self._held.append((topics, pairs, partitions))
                self._held_records += len(pairs)
                return
            flushing.result()  # waits if the hold is full; raises what the flush raised
            self._flushing = None
            self._produce(self._take_held())
        produce_all(self._producer, topics, pairs, partitions)
        self._producer.poll(0)

    def flush_at_barrier(self) -> Future[None]:
        """Everything sent so far, held records included, flushed on the flush thread; the
        future is done once the brokers acknowledged all of it (after the flushes of earlier
        barriers), and fails if a delivery failed or the flush timed out."""
        self._flushing = self._thread.submit(self._flush, self._flushing, self._take_held())
        self._unfinished = [f for f in self._unfinished if not f.done()] + [self._flushing]
        return self._flushing

    def _flush(self, earlier: Future[None] | None, held: list[_Sent]) -> None:
        """On the flush thread, after ``earlier`` (one thread: it ran first)."""
        if earlier is not None:
            earlier.result()  # its failure is this one's too: its records are not all there
        self._produce(held)
        flush(self._producer)
        failure = self._failures()
        if failure is not None:
            raise RuntimeError(f"KafkaSink: {failure}")

    def _take_held(self) -> list[_Sent]:
        held, self._held, self._held_records = self._held, [], 0
        return held

    def _produce(self, held: list[_Sent]) -> None:
        for topics, pairs, partitions in held:
            produce_all(self._producer, topics, pairs, partitions)

    def close(self, timeout_s: float | None = None) -> bool:
        """Waits (``CLOSE_WAIT_S`` unless told) for the flush that runs, then lets the flush
        thread go; True if no flush uses the producer any more. What is held is dropped: it
        was written after the last barrier, and a restore replays it.

        False: the flush still runs, inside the producer's flush, on the flush thread. The
        caller must then leave the producer's flush alone (two threads in it, and a close
        that waits twice) and purge it instead: the flush's checkpoint is never acknowledged
        (the task that would acknowledge it is closing), so a restore replays those records
        whether or not the brokers get them."""
        flushing = self._flushing
        if flushing is not None:
            wait_s = CLOSE_WAIT_S if timeout_s is None else timeout_s
            with contextlib.suppress(Exception):
                flushing.result(min(wait_s, FLUSH_TIMEOUT_S))
        self._thread.shutdown(wait=False, cancel_futures=True)
        self._take_held()
        # A flush still queued is canceled now (done, never to run); one the thread took is
        # not done until it ends: the last one being done says nothing of an earlier one.
        return all(f.done() for f in self._unfinished)
