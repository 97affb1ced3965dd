"""KafkaSource's enumerator: finds the partitions of the topics (or of the topics a pattern
matches) and hands each to the reader the owner rule names (``partition_assignment.py``).

The first discovery starts each partition where the starting offsets say (and, bounded, stops
it at the stopping offsets resolved then); a partition found later is read from its earliest
offset (Flink's rule for discovered partitions). Its state: the partitions it handed out, and
those it found but has not handed out yet (their owner's reader was not running), so that a
restore, at any parallelism, neither reads a partition twice nor forgets a new one.

**I/O:** ``_discover`` asks the brokers, on the coordinator's discovery thread, through a
consumer of its own.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from barrierflow.connectors.interfaces.split_enumerator import (
    SplitEnumerator,
    SplitEnumeratorContext,
)
from barrierflow.connectors.kafka.offsets import KafkaOffsetsInitializer, resolve
from barrierflow.connectors.kafka.partition_assignment import owner
from barrierflow.connectors.kafka.partition_split import KafkaEnumeratorState, KafkaPartitionSplit

if TYPE_CHECKING:
    from barrierflow.connectors.kafka.source import KafkaSource

log = logging.getLogger("barrierflow.connectors.kafka")

TopicPartition = tuple[str, int]


class KafkaSourceEnumerator(SplitEnumerator):
    def __init__(
        self,
        source: KafkaSource,
        context: SplitEnumeratorContext,
        assigned: list[TopicPartition] | None = None,
        pending: list[KafkaPartitionSplit] | None = None,
        discovered: bool = False,
    ) -> None:
        self._source = source
        self._context = context
        self._assigned = set(assigned or ())
        self._pending = list(pending or [])
        self._discovered = discovered  # the first discovery is done: where reading starts
        self._known = frozenset(self._assigned | {s.topic_partition for s in self._pending})
        self._consumer: Any = None  # for metadata, on the discovery thread only

    @classmethod
    def restore(
        cls, source: KafkaSource, context: SplitEnumeratorContext, state: KafkaEnumeratorState
    ) -> KafkaSourceEnumerator:
        return cls(source, context, state.assigned, state.pending, state.discovered)

    def start(self) -> None:
        interval_ms = self._source.discovery_interval_ms
        interval_s = interval_ms / 1000 if interval_ms > 0 else float("inf")  # else: once
        if interval_s == float("inf") and self._discovered:
            return  # a restored enumerator that will find nothing new
        self._context.call_periodically(self._discover, self._found, interval_s)

    def _discover(self) -> list[KafkaPartitionSplit]:
        """The partitions not known yet, with the offsets to read them from (and to)."""
        if self._consumer is None:
            self._consumer = self._source.metadata_consumer()
        known = self._known
        new = [tp for tp in self._source.partitions(self._consumer) if tp not in known]
        first = not self._discovered
        starting = self._source.starting_offsets if first else KafkaOffsetsInitializer.earliest()
        start = resolve(starting, self._consumer, new)
        stopping = self._source.stopping_offsets  # a bounded source's
        stop = resolve(stopping, self._consumer, new) if first and stopping is not None else {}
        return [KafkaPartitionSplit(t, p, start[(t, p)], stop.get((t, p))) for t, p in new]

    def _found(self, splits: list[KafkaPartitionSplit]) -> None:
        new = [s for s in splits if s.topic_partition not in self._known]
        if new and self._discovered:
            log.info(
                "KafkaSource %s discovered %s", self._context.operator_uid,
                ", ".join(s.split_id for s in new),
            )  # fmt: skip
        self._pending += new
        self._known = self._known | {s.topic_partition for s in new}
        self._discovered = True
        for subtask in sorted(self._context.registered_readers()):
            self.add_reader(subtask)

    def add_reader(self, subtask: int) -> None:
        """Hands ``subtask`` the partitions it owns; a bounded source, once it discovered
        them, has no more."""
        p = self._context.parallelism
        mine = [s for s in self._pending if owner(s.topic, s.partition, p) == subtask]
        if mine:
            self._pending = [s for s in self._pending if s not in mine]
            self._assigned.update(s.topic_partition for s in mine)
            self._context.assign_splits({subtask: mine})
        if self._source.bounded and self._discovered:
            self._context.signal_no_more_splits(subtask)

    def handle_split_request(self, subtask: int) -> None:
        pass  # partitions go to their owners as they are found

    def add_splits_back(self, splits: list[KafkaPartitionSplit], subtask: int) -> None:
        self._assigned.difference_update(s.topic_partition for s in splits)
        self._pending += splits

    def snapshot_state(self, checkpoint_id: int) -> KafkaEnumeratorState:
        return KafkaEnumeratorState(sorted(self._assigned), list(self._pending), self._discovered)

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()  # a discovery still running gets an error, logged
