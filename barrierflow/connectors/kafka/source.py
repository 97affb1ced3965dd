"""KafkaSource: topic partitions as replayable splits, their offsets in the checkpoint.

Each partition is read by the subtask ``partition_assignment.owner`` names, so subtasks agree
on who reads what without a coordinator, at start, after discovery and after a rescale. The
offsets are the source's union operator state: on restore every subtask sees every partition's
offset and takes those it owns at the new parallelism; a partition it owns that no checkpoint
knows is new and is read from its earliest offset (Flink's rule for discovered partitions).
Offsets are committed to the consumer group when a checkpoint completes, for monitoring only:
recovery uses the checkpoint. Messages are read ``read_committed`` unless told otherwise, so
only committed transactional data is seen.

**Threading:** a reader is used by its subtask's task thread only.
**I/O:** one confluent-kafka consumer per subtask (and a short-lived one for metadata).
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any

from barrierflow.connectors.kafka.offsets import KafkaOffsetsInitializer, resolve
from barrierflow.connectors.kafka.partition_assignment import owner
from barrierflow.connectors.optional_dependency import require
from barrierflow.connectors.sink import JobSettings
from barrierflow.connectors.source import SourceReaderContext
from barrierflow.errors import ConfigurationError

log = logging.getLogger("barrierflow.connectors.kafka")

_METADATA_TIMEOUT_S = 10.0
_OUR_PROPERTIES = {"partition.discovery.interval.ms"}


class KafkaSource:
    def __init__(
        self,
        bootstrap_servers: str,
        topics: list[str] | None,
        topic_pattern: str | None,
        group_id: str | None,
        starting_offsets: KafkaOffsetsInitializer,
        stopping_offsets: KafkaOffsetsInitializer | None,
        deserializer: Any,
        properties: dict[str, str],
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.topics = topics
        self.topic_pattern = topic_pattern
        self.group_id = group_id
        self.starting_offsets = starting_offsets
        self.stopping_offsets = stopping_offsets
        self.deserializer = deserializer
        self.properties = dict(properties)
        interval = self.properties.get("partition.discovery.interval.ms", 300_000)
        try:
            self.discovery_interval_ms = int(interval)
        except ValueError:
            raise ConfigurationError(
                f"KafkaSource: partition.discovery.interval.ms must be milliseconds, "
                f"got {interval!r}"
            ) from None
        if stopping_offsets is not None:
            self.discovery_interval_ms = 0  # a bounded source reads what it found at start

    @staticmethod
    def builder() -> KafkaSourceBuilder:
        return KafkaSourceBuilder()

    # --- configuration of the client ----------------------------------------------------------

    def consumer_config(self, group_id: str) -> dict[str, Any]:
        conf: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap_servers,
            "group.id": group_id,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
        }
        conf.update({k: v for k, v in self.properties.items() if k not in _OUR_PROPERTIES})
        return conf

    def _metadata_consumer(self) -> Any:
        kafka = require("confluent_kafka", "kafka", "KafkaSource")
        return kafka.Consumer(self.consumer_config(self.group_id or "barrierflow-metadata"))

    def partitions(self, consumer: Any) -> list[tuple[str, int]]:
        """Every partition of the topics (or of the topics the pattern matches), sorted."""
        metadata = consumer.list_topics(timeout=_METADATA_TIMEOUT_S)
        if self.topics is not None:
            missing = [t for t in self.topics if t not in metadata.topics]
            if missing:
                raise ConfigurationError(
                    f"KafkaSource: topic(s) {', '.join(missing)} do not exist on "
                    f"{self.bootstrap_servers}; create them first (topics are never created "
                    "by the source)"
                )
            names = self.topics
        else:
            pattern = re.compile(self.topic_pattern or "")
            names = [t for t in metadata.topics if pattern.fullmatch(t)]
        return sorted((t, p) for t in names for p in metadata.topics[t].partitions)

    # --- the Source interface -----------------------------------------------------------------

    def check(self, job: JobSettings | None = None) -> None:
        """On the driver, before submission: the brokers answer and the topics exist."""
        kafka = require("confluent_kafka", "kafka", "KafkaSource")
        consumer = self._metadata_consumer()
        try:
            self.partitions(consumer)
        except kafka.KafkaException as e:
            raise ConfigurationError(
                f"KafkaSource cannot reach the Kafka brokers at {self.bootstrap_servers}: "
                f"{e.args[0].str() if e.args else e}"
            ) from None
        finally:
            consumer.close()

    def initial_splits(self, subtask: int, parallelism: int) -> list[dict]:
        consumer = self._metadata_consumer()
        try:
            mine = [tp for tp in self.partitions(consumer) if owner(*tp, parallelism) == subtask]
            start = resolve(self.starting_offsets, consumer, mine)
            stop = resolve(self.stopping_offsets, consumer, mine) if self.bounded else {}
        finally:
            consumer.close()
        return [
            {"topic": t, "partition": p, "offset": start[(t, p)], "stop": stop.get((t, p))}
            for t, p in mine
        ]

    def assign_splits(self, all_splits: list[dict], subtask: int, parallelism: int) -> list[dict]:
        return [s for s in all_splits if owner(s["topic"], s["partition"], parallelism) == subtask]

    def create_reader(self, splits: list[dict], context: SourceReaderContext) -> KafkaSourceReader:
        return KafkaSourceReader(self, splits, context)

    @property
    def bounded(self) -> bool:
        return self.stopping_offsets is not None

    def __repr__(self) -> str:
        what = self.topics if self.topics is not None else f"pattern {self.topic_pattern!r}"
        return f"KafkaSource({self.bootstrap_servers!r}, {what})"


class KafkaSourceReader:
    def __init__(
        self, source: KafkaSource, splits: list[dict], context: SourceReaderContext
    ) -> None:
        kafka = require("confluent_kafka", "kafka", "KafkaSource")
        self._kafka = kafka
        self._source = source
        self._context = context
        self._deserialize = source.deserializer.deserialize
        group = source.group_id or f"barrierflow-{context.job_name}-{context.operator_uid}"
        self._consumer = kafka.Consumer(source.consumer_config(group))
        self._splits: dict[tuple[str, int], dict] = {
            (s["topic"], s["partition"]): dict(s) for s in splits
        }
        self._finished: set[tuple[str, int]] = set()
        self._last: list[tuple[str, int]] = []
        for tp, s in self._splits.items():
            if s["stop"] is not None and s["offset"] >= s["stop"]:
                self._finished.add(tp)
        self._consumer.assign(
            [kafka.TopicPartition(t, p, s["offset"]) for (t, p), s in self._splits.items()]
        )
        self._next_discovery = (
            time.monotonic() + source.discovery_interval_ms / 1000
            if source.discovery_interval_ms > 0
            else float("inf")
        )
        log.info(
            "KafkaSource %s subtask %d reads %s",
            context.operator_uid, context.subtask,
            ", ".join(f"{t}-{p}@{s['offset']}" for (t, p), s in sorted(self._splits.items()))
            or "no partition",
        )  # fmt: skip

    def poll(self, max_records: int) -> list[Any] | None:
        if time.monotonic() >= self._next_discovery:
            self._discover()
        if self._source.bounded and len(self._finished) == len(self._splits):
            return None
        out: list[Any] = []
        runs: list[list] = []  # [split id, records] of consecutive records of one partition
        for message in self._consumer.consume(max_records, timeout=0):
            error = message.error()
            tp = (message.topic(), message.partition())
            split = self._splits.get(tp)
            if error is not None:
                if error.code() == self._kafka.KafkaError._PARTITION_EOF:
                    stop = split["stop"] if split is not None else None
                    if stop is not None and message.offset() >= stop:
                        self._finished.add(tp)
                    continue
                raise self._kafka.KafkaException(error)
            if split is None or tp in self._finished:
                continue
            offset = message.offset()
            if split["stop"] is not None and offset >= split["stop"]:
                self._finished.add(tp)
                continue
            try:
                out.append(self._deserialize(message.value()))
            except Exception as e:
                raise ValueError(
                    f"KafkaSource cannot deserialize the message at topic {tp[0]} partition "
                    f"{tp[1]} offset {offset} with {self._source.deserializer!r}: "
                    f"{type(e).__name__}: {e}; value {message.value()!r:.100}"
                ) from e
            split["offset"] = offset + 1
            if split["stop"] is not None and offset + 1 >= split["stop"]:
                self._finished.add(tp)
            if runs and runs[-1][0] == tp:
                runs[-1][1] += 1
            else:
                runs.append([tp, 1])
        self._last = [(f"{t}-{p}", n) for (t, p), n in runs]
        return out

    def last_poll_splits(self) -> list[tuple[str, int]]:
        return self._last

    def _discover(self) -> None:
        """Partitions this subtask owns and does not read: new ones, read from the start."""
        self._next_discovery = time.monotonic() + self._source.discovery_interval_ms / 1000
        try:
            partitions = self._source.partitions(self._consumer)
        except (self._kafka.KafkaException, ConfigurationError) as e:
            log.warning("KafkaSource partition discovery failed, will retry: %s", e)
            return
        p = self._context.parallelism
        new = [
            tp
            for tp in partitions
            if tp not in self._splits and owner(*tp, p) == self._context.subtask
        ]
        if not new:
            return
        start = resolve(KafkaOffsetsInitializer.earliest(), self._consumer, new)
        for t, part in new:
            self._splits[(t, part)] = {
                "topic": t, "partition": part, "offset": start[(t, part)], "stop": None,
            }  # fmt: skip
        self._consumer.incremental_assign(
            [self._kafka.TopicPartition(t, part, start[(t, part)]) for t, part in new]
        )
        log.info(
            "KafkaSource %s subtask %d discovered %s",
            self._context.operator_uid, self._context.subtask,
            ", ".join(f"{t}-{part}" for t, part in new),
        )  # fmt: skip

    def snapshot(self) -> list[dict]:
        return [dict(s) for s in self._splits.values()]

    def notify_checkpoint_complete(self, checkpoint_id: int, positions: list[dict]) -> None:
        """Commits the checkpoint's offsets to the consumer group: for monitoring, as Flink."""
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


class KafkaSourceBuilder:
    """PyFlink's ``KafkaSource.builder()``."""

    def __init__(self) -> None:
        self._servers: str | None = None
        self._topics: list[str] | None = None
        self._pattern: str | None = None
        self._group_id: str | None = None
        self._starting = KafkaOffsetsInitializer.earliest()
        self._stopping: KafkaOffsetsInitializer | None = None
        self._deserializer: Any = None
        self._properties: dict[str, str] = {}

    def set_bootstrap_servers(self, servers: str) -> KafkaSourceBuilder:
        self._servers = servers
        return self

    def set_topics(self, *topics: str) -> KafkaSourceBuilder:
        if len(topics) == 1 and isinstance(topics[0], list | tuple):
            topics = tuple(topics[0])
        self._topics = list(topics)
        return self

    def set_topic_pattern(self, pattern: str) -> KafkaSourceBuilder:
        try:
            re.compile(pattern)
        except re.error as e:
            raise ConfigurationError(f"KafkaSource topic pattern {pattern!r}: {e}") from None
        self._pattern = pattern
        return self

    def set_group_id(self, group_id: str) -> KafkaSourceBuilder:
        self._group_id = group_id
        return self

    def set_starting_offsets(self, initializer: KafkaOffsetsInitializer) -> KafkaSourceBuilder:
        self._starting = _initializer(initializer, "set_starting_offsets")
        return self

    def set_bounded(self, initializer: KafkaOffsetsInitializer) -> KafkaSourceBuilder:
        self._stopping = _initializer(initializer, "set_bounded")
        return self

    def set_value_only_deserializer(self, schema: Any) -> KafkaSourceBuilder:
        if not callable(getattr(schema, "deserialize", None)):
            raise ConfigurationError(
                f"KafkaSource needs a deserialization schema such as SimpleStringSchema(), "
                f"got {schema!r:.200}"
            )
        self._deserializer = schema
        return self

    def set_property(self, key: str, value: Any) -> KafkaSourceBuilder:
        self._properties[key] = str(value)
        return self

    def set_properties(self, properties: dict[str, Any]) -> KafkaSourceBuilder:
        for k, v in properties.items():
            self.set_property(k, v)
        return self

    def build(self) -> KafkaSource:
        problems = []
        if not self._servers and "bootstrap.servers" not in self._properties:
            problems.append("set_bootstrap_servers('host:9092')")
        if (self._topics is None) == (self._pattern is None):
            problems.append("exactly one of set_topics(...) and set_topic_pattern(...)")
        elif self._topics is not None and not all(isinstance(t, str) and t for t in self._topics):
            problems.append(f"topic names, got {self._topics!r}")
        if self._deserializer is None:
            problems.append("set_value_only_deserializer(SimpleStringSchema())")
        if problems:
            raise ConfigurationError("KafkaSource needs " + "; ".join(problems))
        return KafkaSource(
            self._servers or self._properties["bootstrap.servers"],
            self._topics,
            self._pattern,
            self._group_id or self._properties.get("group.id"),
            self._starting,
            self._stopping,
            self._deserializer,
            self._properties,
        )


def _initializer(value: Any, method: str) -> KafkaOffsetsInitializer:
    if not isinstance(value, KafkaOffsetsInitializer):
        raise ConfigurationError(
            f"KafkaSource.{method} needs a KafkaOffsetsInitializer such as "
            f"KafkaOffsetsInitializer.earliest(), got {value!r:.200}"
        )
    return value
