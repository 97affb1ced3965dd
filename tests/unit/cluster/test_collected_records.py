"""Records sent to the driver: the driver's collectors (each delivery once; PyFlink's print
format). The collect sink and the collection source are tested with the connectors."""

from __future__ import annotations

import io
import pickle

import pytest

from barrierflow.cluster import collected_records
from barrierflow.cluster.collected_records import PrintCollector, QueueCollector
from barrierflow.control.messages import CollectedRecords


def message(collector, delivery, records, subtask=0, parallelism=1):
    return CollectedRecords(
        1, 7, collector.id, delivery, subtask, parallelism, pickle.dumps(records)
    )


def test_a_delivery_sent_again_after_a_recovery_is_taken_once():
    collector = QueueCollector()
    collector.accept(message(collector, "0/3/0", ["a", "b"]))
    collector.accept(message(collector, "0/3/0", ["a", "b"]))  # a recovery's resend
    collector.accept(message(collector, "1/3/0", ["c"]))
    taken = []
    while not collector.records.empty():
        taken.append(collector.records.get())
    assert taken == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("identifier", "parallelism", "line"),
    [(None, 1, "(1, 'x')"), (None, 2, "2> (1, 'x')"), ("out", 1, "out> (1, 'x')"),
     ("out", 3, "out:2> (1, 'x')")],
)  # fmt: skip
def test_print_writes_lines_as_pyflink_does(identifier, parallelism, line):
    out = io.StringIO()
    collector = PrintCollector(identifier, out=out)
    collector.accept(message(collector, "d", [(1, "x")], subtask=1, parallelism=parallelism))
    assert out.getvalue() == line + "\n"


def test_records_of_an_unknown_collector_are_dropped_and_known_ones_delivered():
    collector = QueueCollector()
    collected_records.register(collector)
    try:
        collected_records.deliver(message(collector, "d", [1]))
        other = QueueCollector()  # never registered
        collected_records.deliver(message(other, "d", [2]))
        assert collector.records.get_nowait() == 1 and other.records.empty()
    finally:
        collected_records.unregister(collector.id)
