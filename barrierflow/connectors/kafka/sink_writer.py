"""KafkaSink's writers: with EXACTLY_ONCE, the records of one checkpoint interval go into one
transaction, flushed at the barrier and committed when the checkpoint completes
(``transactions.py``); AT_LEAST_ONCE flushes at the barrier on a thread of its own, and the
checkpoint is acknowledged once every delivery was (``background_flush.py``); NONE only sends.

**Threading:** the task thread (librdkafka's threads, and an AT_LEAST_ONCE writer's flush
thread, call back into ``_delivered``, which only appends). **I/O:** per slot in use, a
producer and a consumer of its commit group.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import Future
from itertools import repeat
from typing import TYPE_CHECKING, Any

from barrierflow.connectors.base.optional_dependency import require
from barrierflow.connectors.interfaces.committables import END_OF_INPUT
from barrierflow.connectors.interfaces.delivery_guarantee import DeliveryGuarantee
from barrierflow.connectors.interfaces.sink import SinkWriter, SinkWriterContext
from barrierflow.connectors.kafka.background_flush import BackgroundFlush
from barrierflow.connectors.kafka.batch_produce import (
    PartitionIds,
    partitioned_all,
    produce_all,
    serialized_all,
)
from barrierflow.connectors.kafka.sink_committable import KafkaCommittable
from barrierflow.connectors.kafka.transactions import (
    FLUSH_TIMEOUT_S,
    TRANSACTION_SLOTS,
    check_committed,
    commit_group,
    flush,
    last_committed,
    send_sequence,
)

if TYPE_CHECKING:
    from barrierflow.connectors.kafka.sink import KafkaSink

log = logging.getLogger("barrierflow.connectors.kafka")

FLUSH_SLICE_S = 0.05  # how soon a flush notices that every broker became unreachable


class KafkaWriter(SinkWriter):
    """NONE and AT_LEAST_ONCE: one idempotent producer. AT_LEAST_ONCE hands what was written
    before a barrier to its flush thread, and the checkpoint's acknowledgement waits until the
    brokers acknowledged all of it (``flushing``); a failed delivery fails the task."""

    def __init__(self, sink: KafkaSink, context: SinkWriterContext) -> None:
        self._kafka = require("confluent_kafka", "kafka", "KafkaSink")
        self._sink = sink
        self._serialize = sink.serializer.serialize
        self._topic_of = sink.serializer.topic_of
        self._topic = sink.serializer.topic  # None: a topic selector picks each record's
        self._errors: list[str] = []  # appended by librdkafka's callback, on either thread
        self._producer = self._kafka.Producer(
            {**sink.producer_config(), "on_delivery": self._delivered}
        )
        self._partitioner = sink.serializer.partitioner
        self._partition_ids = PartitionIds(self._producer)
        if self._partitioner is not None:
            self._partitioner.open(context.subtask, context.parallelism)
        self._background: BackgroundFlush | None = None
        if sink.delivery_guarantee is DeliveryGuarantee.AT_LEAST_ONCE:
            self._background = BackgroundFlush(self._producer, self._failure, "kafka-flush")
        self._flushing: Future[None] | None = None  # of the last barrier, not yet handed on

    def _delivered(self, error: Any, message: Any) -> None:
        if error is not None:
            self._errors.append(f"{error.str()} (topic {message.topic()})")

    def _failure(self) -> str | None:
        errors = self._errors
        if not errors:
            return None
        return f"{len(errors)} records were not delivered: {errors[0]}"

    def write(self, records: list[Any]) -> None:
        topic = self._topic
        topics = repeat(topic) if topic is not None else list(map(self._topic_of, records))
        pairs = serialized_all(self._serialize, records)
        partitions = None
        if self._partitioner is not None:
            partitions = partitioned_all(
                self._partitioner, records, topics, pairs, self._partition_ids
            )
        if self._background is not None:
            self._background.send(topics, pairs, partitions)
            return
        produce_all(self._producer, topics, pairs, partitions)
        self._producer.poll(0)

    def prepare_commit(self, checkpoint_id: int) -> list[KafkaCommittable]:
        """AT_LEAST_ONCE: at a barrier, hands the flush on (``flushing``); at the end of input
        of a job without checkpoints, flushes and waits."""
        if self._background is None:
            return []
        failure = self._failure()
        if failure is not None:  # a delivery failed since the last barrier: fail over now
            raise RuntimeError(f"KafkaSink: {failure}")
        flushing = self._background.flush_at_barrier()
        if checkpoint_id == END_OF_INPUT:
            flushing.result()
        else:
            self._flushing = flushing
        return []

    def flushing(self, checkpoint_id: int) -> Future[None] | None:
        flushing, self._flushing = self._flushing, None
        return flushing

    def close(self) -> None:
        """Delivers what the producer still queues (a while), unless an AT_LEAST_ONCE flush
        still runs after the close's wait: then the producer is purged, which ends that flush
        too, and not flushed from this thread while the flush thread is inside its flush. No
        checkpoint needs those records: the one being flushed is never acknowledged now, and a
        restore replays them (at-least-once)."""
        if self._background is not None and not self._background.close():
            self._producer.purge(in_queue=True, in_flight=True, blocking=False)
            return
        self._producer.flush(10)


class _Transaction:
    """One transaction: its slot, its sequence number, its records (kept for a resend), and
    whether every broker was unreachable while it was open (what librdkafka said)."""

    __slots__ = ("outage", "partitions", "records", "sequence", "slot")

    def __init__(self, slot: int, sequence: int) -> None:
        self.slot = slot
        self.sequence = sequence
        self.records: list[tuple[bytes | None, bytes]] = []  # (key, value)
        self.partitions: list[int] = []  # each record's, where the sink's partitioner chose
        self.outage: str | None = None


class _Slot:
    """A transactional id's producer, and a consumer of its commit group (whose committed
    offset is the sequence number of the id's last committed transaction)."""

    __slots__ = ("consumer", "next_sequence", "producer")

    def __init__(self, producer: Any, consumer: Any, next_sequence: int) -> None:
        self.producer = producer
        self.consumer = consumer
        self.next_sequence = next_sequence


class TransactionalKafkaWriter(SinkWriter):
    def __init__(self, sink: KafkaSink, context: SinkWriterContext) -> None:
        self._kafka = require("confluent_kafka", "kafka", "KafkaSink")
        self._sink = sink
        self._serialize = sink.serializer.serialize
        topic = sink.serializer.topic
        assert topic is not None  # EXACTLY_ONCE takes no topic selector (KafkaSink)
        self._topic = topic
        self._subtask = context.subtask
        self._transactional_id = sink.transactional_ids(context.job_name, context.operator_uid)
        self._slots: dict[int, _Slot] = {}
        self._errors: list[str] = []  # deliveries refused, from librdkafka's callback
        self._current: _Transaction | None = None
        self._pending: dict[int, _Transaction] = {}  # slot -> pre-committed, not committed
        self._partitioner = sink.serializer.partitioner
        self._partition_ids: PartitionIds | None = None
        if self._partitioner is not None:
            self._partitioner.open(context.subtask, context.parallelism)

    def _delivered(self, error: Any, message: Any) -> None:
        if error is not None:
            self._errors.append(f"{error.str()} (topic {message.topic()}, {len(message)} bytes)")

    def _client_error(self, error: Any) -> None:
        """librdkafka's ``error_cb``, served by a producer's poll or flush, perhaps late: so
        it marks every transaction open or pre-committed then, whichever producer serves it."""
        if error.code() == self._kafka.KafkaError._ALL_BROKERS_DOWN:
            for txn in (self._current, *self._pending.values()):
                if txn is not None and txn.outage is None:
                    txn.outage = error.str()

    def _slot(self, slot: int) -> _Slot:
        found = self._slots.get(slot)
        if found is None:
            tid = self._transactional_id(self._subtask, slot)
            producer = self._kafka.Producer(
                {
                    **self._sink.producer_config(tid),
                    "on_delivery": self._delivered,
                    "error_cb": self._client_error,
                }
            )
            producer.init_transactions(FLUSH_TIMEOUT_S)  # fences older producers of this id
            consumer = commit_group(self._kafka, self._sink, tid)
            next_sequence = last_committed(self._kafka, consumer, self._topic) + 1
            found = self._slots[slot] = _Slot(producer, consumer, next_sequence)
        return found

    # --- writing ------------------------------------------------------------------------------

    def write(self, records: list[Any]) -> None:
        if not records:
            return
        txn = self._current
        if txn is None:
            txn = self._current = self._begin()
        producer = self._slots[txn.slot].producer
        producer.poll(0)  # serves an outage before any record can join its transaction
        self._refuse_after_outage(txn, producer)
        pairs = serialized_all(self._serialize, records)
        partitions = None
        if self._partitioner is not None:
            if self._partition_ids is None:  # asks once, through the first slot's producer
                self._partition_ids = PartitionIds(producer)
            topics = repeat(self._topic)
            ids = self._partition_ids
            partitions = partitioned_all(self._partitioner, records, topics, pairs, ids)
            txn.partitions += partitions
        produce_all(producer, repeat(self._topic), pairs, partitions)
        txn.records += pairs  # (their delivery reports: at the next write's poll, or the flush)

    def _begin(self) -> _Transaction:
        free = [s for s in range(TRANSACTION_SLOTS) if s not in self._pending]
        if not free:
            raise RuntimeError(
                f"KafkaSink subtask {self._subtask}: {TRANSACTION_SLOTS} transactions await "
                "checkpoints that have not completed; checkpoints are failing or too slow"
            )
        slot = self._slot(free[0])
        txn = _Transaction(free[0], slot.next_sequence)
        slot.next_sequence += 1
        slot.producer.begin_transaction()
        return txn

    def prepare_commit(self, checkpoint_id: int) -> list[KafkaCommittable]:
        txn = self._current
        if txn is None:
            return []
        slot = self._slots[txn.slot]
        self._flush(txn, slot.producer)
        tid = self._transactional_id(self._subtask, txn.slot)
        if self._errors:
            errors, self._errors = self._errors, []
            raise RuntimeError(
                f"KafkaSink: {len(errors)} records of transaction {tid} were refused: {errors[0]}"
            )
        self._refuse_after_outage(txn, slot.producer)
        send_sequence(
            self._kafka, slot.producer, slot.consumer, self._topic, txn.sequence, checkpoint_id
        )
        self._current = None
        self._pending[txn.slot] = txn
        partitions = txn.partitions if self._partitioner is not None else None
        return [KafkaCommittable(tid, txn.slot, txn.sequence, self._topic, txn.records, partitions)]

    def _flush(self, txn: _Transaction, producer: Any) -> None:
        """``transactions.flush``, in slices, so that an outage reported while it waits stops
        the records still queued before the brokers come back."""
        deadline = time.monotonic() + FLUSH_TIMEOUT_S
        while producer.flush(FLUSH_SLICE_S):
            self._refuse_after_outage(txn, producer)
            if time.monotonic() > deadline:
                flush(producer)  # one last wait, and its error

    def _refuse_after_outage(self, txn: _Transaction, producer: Any) -> None:
        """Fails the task if every broker was unreachable while ``txn`` was open, dropping its
        records still queued, so that none reaches a broker after it came back.

        Kafka keeps an open transaction across a restart; the test broker (noida-db) forgets
        it, then commits the group offset sent after the restart and none of its records,
        which no check of the offset can tell (docs/reliability.md, seed 20261125000). And a
        record it takes into the forgotten transaction after the restart is never ended: no
        abort or fence writes its marker, so that partition's read_committed readers stop
        before it for good, and every transaction committed after it, of any id, is lost to
        them (seed 5027). The failover aborts the transaction and replays its records."""
        if txn.outage is None:
            return
        producer.purge(in_queue=True, in_flight=True, blocking=False)
        tid = self._transactional_id(self._subtask, txn.slot)
        raise RuntimeError(
            f"KafkaSink: every Kafka broker was unreachable ({txn.outage}) while "
            f"transaction {tid} was open; a broker that restarted may have lost its records "
            "without an error, so none more is sent and it is not pre-committed: the task "
            "fails over and its records are replayed from the last checkpoint"
        )

    # --- committing (the committer's, on this writer's producers) -----------------------------

    def commit_pending(self, c: KafkaCommittable, checkpoint_id: int) -> bool:
        """Commits the transaction of committable ``c`` if this writer has it open, pre-
        committed; False if not (a restored one, one a failed commit dropped, or one pre-
        committed across an outage of the brokers)."""
        txn = self._pending.get(c.slot)
        if txn is None or txn.sequence != c.sequence:
            return False
        if c.transactional_id != self._transactional_id(self._subtask, txn.slot):
            return False
        del self._pending[txn.slot]
        slot = self._slots[txn.slot]
        slot.producer.poll(0)  # serves an outage its producer has not told yet
        if txn.outage is not None:
            # Open during an outage: the broker may have lost its records and still commit
            # its offset. Fenced and sent again from ``c`` instead.
            self._close_slot(txn.slot)
            return False
        try:
            slot.producer.commit_transaction(FLUSH_TIMEOUT_S)
        except self._kafka.KafkaException as e:
            # Fenced (a newer attempt runs: this one is a zombie) or aborted by the brokers (a
            # timeout bumps the producer's epoch too). The slot's producer is done for; a retry
            # settles the committable on a new one (``transactions.ensure_committed``).
            self._close_slot(txn.slot)
            raise RuntimeError(
                f"KafkaSink could not commit {c.transactional_id} of checkpoint "
                f"{checkpoint_id}: {e.args[0].str() if e.args else e}"
            ) from e
        try:
            check_committed(
                self._kafka, slot.consumer, self._topic, c.transactional_id, txn.sequence,
                checkpoint_id,
            )  # fmt: skip
        except RuntimeError:
            # The brokers lost it, and with it this producer's transactional state: the retry
            # sends its records again on a new producer of the id, which fences this one.
            self._close_slot(txn.slot)
            raise
        return True

    def _close_slot(self, slot: int) -> None:
        found = self._slots.pop(slot, None)
        if found is not None:
            found.producer.flush(1)
            found.consumer.close()

    def close(self) -> None:
        """Aborts the open transaction (its records go nowhere: they were never checkpointed)
        and every pre-committed one (a restore sends their records again from the
        checkpoint), so that no open transaction holds back read_committed consumers."""
        for slot, found in list(self._slots.items()):
            current = self._current is not None and self._current.slot == slot
            if current or slot in self._pending:
                try:
                    found.producer.abort_transaction(5)
                except self._kafka.KafkaException as e:
                    log.debug("KafkaSink: abort on close of slot %d failed: %s", slot, e)
            self._close_slot(slot)
