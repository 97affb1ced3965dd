"""KafkaSource's reader: one consumer, assigned the partitions the enumerator hands this
subtask; a partition's split is its next offset (and, bounded, the offset it stops at). The
splits, positions, runs and what a checkpoint keeps are the split reader's
(``base/split_reader.py``); this reader reads every partition at once, its batches
interleaving them.

**Threading:** the task thread (librdkafka's own threads stay inside the consumer).
**I/O:** one confluent-kafka consumer per subtask.
"""

from __future__ import annotations

import logging
from bisect import bisect_left
from itertools import groupby, repeat
from operator import is_, is_not, methodcaller
from typing import TYPE_CHECKING, Any

import msgspec

from barrierflow.connectors.base.batch_map import BatchItemError, map_batch
from barrierflow.connectors.base.optional_dependency import require
from barrierflow.connectors.base.split_reader import Fetched, SplitReader
from barrierflow.connectors.interfaces.source_reader import SourceReaderContext
from barrierflow.connectors.kafka.partition_split import KafkaPartitionSplit
from barrierflow.protocol.source_backlog import SourceBacklog

if TYPE_CHECKING:
    from barrierflow.connectors.kafka.source import KafkaSource

log = logging.getLogger("barrierflow.connectors.kafka")

TopicPartition = tuple[str, int]

# a message's accessors, mapped over a batch at C speed
_error, _topic, _partition = methodcaller("error"), methodcaller("topic"), methodcaller("partition")
_offset, _value = methodcaller("offset"), methodcaller("value")


class KafkaSourceReader(SplitReader[KafkaPartitionSplit]):
    def __init__(self, source: KafkaSource, context: SourceReaderContext) -> None:
        super().__init__()
        kafka = require("confluent_kafka", "kafka", "KafkaSource")
        self._kafka = kafka
        self._source = source
        self._context = context
        self._deserialize = source.deserializer.deserialize
        group = source.group_id or f"barrierflow-{context.job_name}-{context.operator_uid}"
        self._consumer = kafka.Consumer(source.consumer_config(group))
        self._ended: dict[str, KafkaPartitionSplit] = {}  # read up to their stopping offsets
        self._taken: dict[int, list[KafkaPartitionSplit]] = {}  # checkpoint -> positions
        self._read = 0  # messages read, for the backlog's reading rate

    def _splits_added(self, splits: list[KafkaPartitionSplit]) -> None:
        self._consumer.incremental_assign(
            [self._kafka.TopicPartition(s.topic, s.partition, s.offset) for s in splits]
        )
        log.info(
            "KafkaSource %s subtask %d reads %s", self._context.operator_uid,
            self._context.subtask, ", ".join(f"{s.split_id}@{s.offset}" for s in splits),
        )  # fmt: skip
        self._finish([s.split_id for s in splits if s.stop is not None and s.offset >= s.stop])

    def _splits_finished(self, splits: list[KafkaPartitionSplit]) -> None:
        self._ended.update((s.split_id, s) for s in splits)

    def _fetch(self, max_records: int) -> Fetched[KafkaPartitionSplit]:
        """A batch of messages as the records of its runs of one partition each. The work per
        message is C calls mapped over the batch (and the schema's ``deserialize``): a
        Python loop per message cost as much as the client and the JSON decoding together."""
        messages = self._consumer.consume(max_records, timeout=0)
        errors = list(map(_error, messages))
        # by identity: confluent-kafka's KafkaError compared with None leaves an exception set
        events = any(map(is_not, errors, repeat(None)))
        if events:
            data = [m for m, e in zip(messages, errors, strict=True) if e is None]
        else:
            data = messages
        fetched: Fetched[KafkaPartitionSplit] = Fetched()
        start = 0
        for tp, run in groupby(zip(map(_topic, data), map(_partition, data), strict=True)):
            end = start + sum(1 for _ in run)
            self._read_run(tp, data[start:end], fetched)
            start = end
        if events:  # after the data: an end of partition follows the messages before it
            for m, e in zip(messages, errors, strict=True):
                if e is not None:
                    self._partition_event(m, e, fetched)
        return fetched

    def _read_run(self, tp: TopicPartition, messages: list[Any], fetched: Fetched) -> None:
        """Consecutive messages of partition ``tp``, in offset order: a run of their records,
        with the split's position past them."""
        split_id = f"{tp[0]}-{tp[1]}"
        split = self._unfinished().get(split_id)
        if split is None or split_id in fetched.finished:
            return  # not this reader's, or cut at its stopping offset earlier in the batch
        stop = split.stop
        last = messages[-1].offset()
        if stop is not None and last >= stop:  # cut at the stopping offset
            offsets = list(map(_offset, messages))
            messages = messages[: bisect_left(offsets, stop)]
            fetched.finished.append(split_id)
            if not messages:
                return
            last = offsets[len(messages) - 1]
        elif stop is not None and last + 1 >= stop:
            fetched.finished.append(split_id)
        self._read += len(messages)
        records = self._deserialized(tp, messages)
        if any(map(is_, records, repeat(None))):  # a schema skipped one, as Flink's may
            records = [r for r in records if r is not None]
        fetched.runs.append((msgspec.structs.replace(split, offset=last + 1), records))

    def _partition_event(self, message: Any, error: Any, fetched: Fetched) -> None:
        """The end of a partition ends its split if it has a stopping offset there; any
        other error fails the task."""
        if error.code() != self._kafka.KafkaError._PARTITION_EOF:
            raise self._kafka.KafkaException(error)
        split = self._unfinished().get(f"{message.topic()}-{message.partition()}")
        if split is not None and split.stop is not None and message.offset() >= split.stop:
            fetched.finished.append(split.split_id)

    def _deserialized(self, tp: TopicPartition, messages: list[Any]) -> list[Any]:
        try:
            return map_batch(self._deserialize, list(map(_value, messages)))
        except BatchItemError as e:
            failed = e.error
            culprit = messages if e.index is None else [messages[e.index]]
        first, last = culprit[0], culprit[-1]
        where = f"offset {first.offset()}"
        if last is not first:  # it failed in the batch only: the schema keeps state
            where = f"offsets {first.offset()} to {last.offset()}"
        raise ValueError(
            f"KafkaSource cannot deserialize the message at topic {tp[0]} partition {tp[1]} "
            f"{where} with {self._source.deserializer!r}: {type(failed).__name__}: {failed}; "
            f"value {first.value()!r:.100}"
        ) from failed

    def backlog(self) -> SourceBacklog | None:
        """The lag of this reader's partitions: their high watermarks as its last fetches
        carried them (no request to the broker) less its positions, up to a stopping offset;
        None until a fetch told a high watermark."""
        lag, known = 0, False
        for split in self._unfinished().values():
            tp = self._kafka.TopicPartition(split.topic, split.partition)
            offsets = self._consumer.get_watermark_offsets(tp, cached=True)
            if offsets is None or offsets[1] < 0:  # no fetch answered yet
                continue
            high = offsets[1]
            known = True
            end = high if split.stop is None else min(high, split.stop)
            lag += max(0, end - split.offset)
        return SourceBacklog("Kafka lag", lag, self._read) if known else None

    def snapshot_state(self, checkpoint_id: int) -> list[KafkaPartitionSplit]:
        unfinished = super().snapshot_state(checkpoint_id)
        self._taken[checkpoint_id] = [*unfinished, *self._ended.values()]
        return unfinished

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Commits the checkpoint's offsets to the consumer group: for monitoring, as Flink;
        older pending ones are subsumed."""
        done = [cid for cid in self._taken if cid <= checkpoint_id]
        positions = self._taken.get(max(done)) if done else None
        for cid in done:
            del self._taken[cid]
        if self._source.group_id is None or not positions:
            return
        offsets = [self._kafka.TopicPartition(s.topic, s.partition, s.offset) for s in positions]
        try:
            self._consumer.commit(offsets=offsets, asynchronous=True)
        except self._kafka.KafkaException as e:
            log.warning(
                "KafkaSource could not commit offsets of checkpoint %d: %s", checkpoint_id, e
            )

    def close(self) -> None:
        self._consumer.close()
