"""KafkaSource's reader: one consumer, assigned the partitions the enumerator hands this
subtask; a partition's split is its next offset (and, bounded, the offset it stops at).

**Threading:** the task thread (librdkafka's own threads stay inside the consumer).
**I/O:** one confluent-kafka consumer per subtask.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from barrierflow.connectors.optional_dependency import require
from barrierflow.connectors.source_reader import SourceReader, SourceReaderContext, SplitRun
from barrierflow.connectors.split_enumerator import Split

if TYPE_CHECKING:
    from barrierflow.connectors.kafka.source import KafkaSource

log = logging.getLogger("barrierflow.connectors.kafka")

TopicPartition = tuple[str, int]


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
        if self._no_more and len(self._done) == len(self._splits):
            return None
        out: list[Any] = []
        runs: list[list] = []  # [partition, records] of consecutive records of one partition
        for message in self._consumer.consume(max_records, timeout=0):
            tp = (message.topic(), message.partition())
            split = self._splits.get(tp)
            error = message.error()
            if error is not None:
                if error.code() != self._kafka.KafkaError._PARTITION_EOF:
                    raise self._kafka.KafkaException(error)
                stop = split["stop"] if split is not None else None
                if stop is not None and message.offset() >= stop:
                    self._end(tp)
                continue
            if split is None or tp in self._done:
                continue
            offset = message.offset()
            if split["stop"] is not None and offset >= split["stop"]:
                self._end(tp)
                continue
            record = self._deserialized(message, tp, offset)
            split["offset"] = offset + 1
            if split["stop"] is not None and offset + 1 >= split["stop"]:
                self._end(tp)
            if record is None:
                continue  # a schema's way to skip a message (ignore_parse_errors), as Flink's
            out.append(record)
            if runs and runs[-1][0] == tp:
                runs[-1][1] += 1
            else:
                runs.append([tp, 1])
        self._last = [(f"{t}-{p}", n) for (t, p), n in runs]
        return out

    def _deserialized(self, message: Any, tp: TopicPartition, offset: int) -> Any:
        try:
            return self._deserialize(message.value())
        except Exception as e:
            raise ValueError(
                f"KafkaSource cannot deserialize the message at topic {tp[0]} partition "
                f"{tp[1]} offset {offset} with {self._source.deserializer!r}: "
                f"{type(e).__name__}: {e}; value {message.value()!r:.100}"
            ) from e

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
