"""A checkpoint an earlier barrierflow took, before sources had split enumerators, holds the
readers' splits and no enumerator state. A source whose readers were given all of their splits
at the start goes on from those alone; any other refuses, naming itself, rather than read its
input again (the doubled counts of a job restored from such a savepoint)."""

from __future__ import annotations

import pytest

from barrierflow.cluster.coordinators.source_coordinator import SourceCoordinator
from barrierflow.common import SimpleStringSchema
from barrierflow.connectors.builtin.range_reader import RangeSplit
from barrierflow.connectors.interfaces import source_events
from barrierflow.connectors.interfaces.versioned_codec import decode_stored
from barrierflow.control.operator_coordinator import OperatorCoordinatorContext
from barrierflow.datastream.connectors.kafka import KafkaSource
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.errors import ConfigurationError


class Context(OperatorCoordinatorContext):
    def __init__(self) -> None:
        self.sent: list[tuple[int, object]] = []

    @property
    def operator_uid(self) -> str:
        return "numbers"

    @property
    def operator_name(self) -> str:
        return "numbers"

    @property
    def parallelism(self) -> int:
        return 2

    def send_event(self, subtask: int, payload: bytes) -> None:
        self.sent.append((subtask, source_events.decode_to_reader(payload)))

    def call_periodically(self, interval_s, fn) -> None:
        pass

    def call_soon(self, fn) -> None:
        fn()

    def fail_job(self, error) -> None:
        raise AssertionError(error)


def test_a_sequence_restored_from_an_earlier_version_assigns_nothing_more():
    context = Context()
    coordinator = SourceCoordinator(NumberSequenceSource(1, 100), context)
    coordinator.restore_from_earlier_version(7)
    coordinator.start()
    coordinator.subtask_ready(0)
    coordinator.subtask_ready(1)
    added = [e.splits for _, e in context.sent if isinstance(e, source_events.AddSplits)]
    assert all(splits == [] for splits in added)  # the readers' restored splits are the rest
    assert sorted(s for s, e in context.sent if isinstance(e, source_events.NoMoreSplits)) == [0, 1]


def test_a_fresh_sequence_deals_out_its_whole_range():
    context = Context()
    source = NumberSequenceSource(1, 100)
    coordinator = SourceCoordinator(source, context)
    coordinator.restore_state(None, None)
    coordinator.start()
    coordinator.subtask_ready(0)
    added = [e.splits for _, e in context.sent if isinstance(e, source_events.AddSplits)]
    assert [[decode_stored(source.split_codec(), s) for s in a] for a in added] == [
        [RangeSplit(1, 50)]
    ]


def test_kafka_restored_from_an_earlier_version_refuses_naming_the_source():
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers("localhost:1")
        .set_topics("events")
        .set_group_id("g")
        .set_value_only_deserializer(SimpleStringSchema())
        .build()
    )
    coordinator = SourceCoordinator(source, Context())
    with pytest.raises(ConfigurationError, match=r"'numbers'.*earlier barrierflow.*-n"):
        coordinator.restore_from_earlier_version(7)
