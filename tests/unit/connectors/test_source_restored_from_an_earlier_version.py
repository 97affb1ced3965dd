"""A checkpoint an earlier barrierflow took, before sources had split enumerators, holds the
readers' splits and no enumerator state. A source whose readers were given all of their splits
at the start goes on from those alone; any other refuses, naming itself, rather than read its
input again (the doubled counts of a job restored from such a savepoint)."""

from __future__ import annotations

import pytest

from barrierflow.common import SimpleStringSchema
from barrierflow.connectors import SequenceSource, source_events
from barrierflow.connectors.kafka import KafkaSource
from barrierflow.control.operator_coordinator import OperatorCoordinatorContext
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
    coordinator = SequenceSource(1, 100).create_coordinator(context)
    coordinator.restore_from_earlier_version(7)
    coordinator.start()
    coordinator.subtask_ready(0)
    coordinator.subtask_ready(1)
    added = [e.splits for _, e in context.sent if isinstance(e, source_events.AddSplits)]
    assert all(splits == [] for splits in added)  # the readers' restored splits are the rest
    assert sorted(s for s, e in context.sent if isinstance(e, source_events.NoMoreSplits)) == [0, 1]


def test_a_fresh_sequence_deals_out_its_whole_range():
    context = Context()
    coordinator = SequenceSource(1, 100).create_coordinator(context)
    coordinator.restore_state(None, None)
    coordinator.start()
    coordinator.subtask_ready(0)
    added = [e.splits for _, e in context.sent if isinstance(e, source_events.AddSplits)]
    assert added == [[{"next": 1, "end": 50}]]


def test_kafka_restored_from_an_earlier_version_refuses_naming_the_source():
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers("localhost:1")
        .set_topics("events")
        .set_group_id("g")
        .set_value_only_deserializer(SimpleStringSchema())
        .build()
    )
    coordinator = source.create_coordinator(Context())
    with pytest.raises(ConfigurationError, match=r"'numbers'.*earlier barrierflow.*-n"):
        coordinator.restore_from_earlier_version(7)
