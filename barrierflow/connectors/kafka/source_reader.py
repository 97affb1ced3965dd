"""KafkaSource's reader: one consumer, assigned the partitions the enumerator hands this
subtask; a partition's split is its next offset (and, bounded, the offset it stops at).

**Threading:** the task thread (librdkafka's own threads stay inside the consumer).
**I/O:** one confluent-kafka consumer per subtask.
"""

from __future__ import annotations

import logging
from bisect import bisect_left
from itertools import groupby, repeat
from operator import is_, is_not, methodcaller
from typing import TYPE_CHECKING, Any

from barrierflow.connectors.batch_map import BatchItemError, map_batch
from barrierflow.connectors.optional_dependency import require
from barrierflow.connectors.source_reader import SourceReader, SourceReaderContext, SplitRun
from barrierflow.connectors.split_enumerator import Split

if TYPE_CHECKING:
    from barrierflow.connectors.kafka.source import KafkaSource

log = logging.getLogger("barrierflow.connectors.kafka")

TopicPartition = tuple[str, int]

# a message's accessors, mapped over a batch at C speed
_error, _topic, _partition = methodcaller("error"), methodcaller("topic"), methodcaller("partition")
_offset, _value = methodcaller("offset"), methodcaller("value")


class KafkaSourceReader(SourceReader):
    def __init__(self, source: KafkaSource, context: SourceReaderContext) -> None:
        kafka = require("confluent_kafka", "kafka", "KafkaSource")
        self._kafka = kafka
        self._source = source
        self._context = context
        self._deserialize = source.deserializer.deserialize
        group = source.group_id or f"barrierflow-{context.job_name}-{context.operator_uid}"
        self._consumer = kafka.Consumer(source.consumer_config(group))
        self._splits: dict[TopicPartition, Split] = {}
        self._done: set[TopicPartition] = set()  # read up to their stopping offsets
        self._no_more = False
        self._last: list[SplitRun] = []
        self._finished: list[str] = []
        self._taken: dict[int, list[Split]] = {}  # checkpoint id -> positions, until complete

    def add_splits(self, splits: list[Split]) -> None:
        for s in splits:
            self._splits[(s["topic"], s["partition"])] = dict(s)
            if s["stop"] is not None and s["offset"] >= s["stop"]:
                self._end((s["topic"], s["partition"]))
        self._consumer.incremental_assign(
            [self._kafka.TopicPartition(s["topic"], s["partition"], s["offset"]) for s in splits]
        )
        log.info(
            "KafkaSource %s subtask %d reads %s", self._context.operator_uid,
            self._context.subtask,
            ", ".join(f"{s['topic']}-{s['partition']}@{s['offset']}" for s in splits),
        )  # fmt: skip

    def notify_no_more_splits(self) -> None:
        self._no_more = True

    def _end(self, tp: TopicPartition) -> None:
        if tp not in self._done:
            self._done.add(tp)
            self._finished.append(f"{tp[0]}-{tp[1]}")

    def poll(self, max_records: int) -> list[Any] | None:
        """A batch of messages as the records of its runs of one partition each. The work per
        message is C calls mapped over the batch (and the schema's ``deserialize``): a
        Python loop per message cost as much as the client and the JSON decoding together."""
        if self._no_more and len(self._done) == len(self._splits):
            return None
        messages = self._consumer.consume(max_records, timeout=0)
        errors = list(map(_error, messages))
        # by identity: confluent-kafka's KafkaError compared with None leaves an exception set
        events = any(map(is_not, errors, repeat(None)))
        if events:
            data = [m for m, e in zip(messages, errors, strict=True) if e is None]
        else:
            data = messages
        out: list[Any] = []
        self._last = []
        start = 0
        for tp, run in groupby(zip(map(_topic, data), map(_partition, data), strict=True)):
            end = start + sum(1 for _ in run)
            self._read_run(tp, data[start:end], out)
            start = end
        if events:  # after the data: an end of partition follows the messages before it
            for m, e in zip(messages, errors, strict=True):
                if e is not None:
                    self._partition_event(m, e)
        return out

    def _read_run(self, tp: TopicPartition, messages: list[Any], out: list[Any]) -> None:
        """Consecutive messages of partition ``tp``, in offset order: their records to ``out``,
        the split's position past them."""
        split = self._splits.get(tp)
        if split is None or tp in self._done:
            return
        stop = split["stop"]
        last = messages[-1].offset()
        if stop is not None and last >= stop:  # cut at the stopping offset
            offsets = list(map(_offset, messages))
            messages = messages[: bisect_left(offsets, stop)]
            self._end(tp)
            if not messages:
                return
            last = offsets[len(messages) - 1]
        elif stop is not None and last + 1 >= stop:
            self._end(tp)
        records = self._deserialized(tp, messages)
        split["offset"] = last + 1
        if any(map(is_, records, repeat(None))):  # a schema skipped one, as Flink's may
            records = [r for r in records if r is not None]
        if records:
            out += records
            self._last.append((f"{tp[0]}-{tp[1]}", len(records)))

    def _partition_event(self, message: Any, error: Any) -> None:
        """The end of a partition ends its split if it has a stopping offset there; any
        other error fails the task."""
        if error.code() != self._kafka.KafkaError._PARTITION_EOF:
            raise self._kafka.KafkaException(error)
        tp = (message.topic(), message.partition())
        split = self._splits.get(tp)
        stop = split["stop"] if split is not None else None
        if stop is not None and message.offset() >= stop:
            self._end(tp)

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

    def split_runs(self) -> list[SplitRun]:
        return self._last

    def finished_splits(self) -> list[str]:
        done, self._finished = self._finished, []
        return done

    def snapshot_state(self, checkpoint_id: int) -> list[Split]:
        positions = [dict(s) for s in self._splits.values()]
        self._taken[checkpoint_id] = positions
        return [s for s in positions if (s["topic"], s["partition"]) not in self._done]

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Commits the checkpoint's offsets to the consumer group: for monitoring, as Flink;
        older pending ones are subsumed."""
        done = [cid for cid in self._taken if cid <= checkpoint_id]
        positions = self._taken.get(max(done)) if done else None
        for cid in done:
            del self._taken[cid]
        if self._source.group_id is None or not positions:
            return
        offsets = [
            self._kafka.TopicPartition(s["topic"], s["partition"], s["offset"]) for s in positions
        ]
        try:
            self._consumer.commit(offsets=offsets, asynchronous=True)
        except self._kafka.KafkaException as e:
            log.warning(
                "KafkaSource could not commit offsets of checkpoint %d: %s", checkpoint_id, e
            )

    def close(self) -> None:
        self._consumer.close()
