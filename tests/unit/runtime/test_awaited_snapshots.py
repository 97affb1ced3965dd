"""A sink whose writer delivers off the task thread (``SinkWriter.flushing``, as KafkaSink's
AT_LEAST_ONCE): the task goes on after the barrier, and acknowledges the checkpoint only once
the delivery is done, or declines it if the delivery failed."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from barrierflow.connectors.interfaces.delivery_guarantee import DeliveryGuarantee
from barrierflow.datastream.connectors.base import Sink, SinkWriter
from barrierflow.graph.transformation import TransformationKind
from barrierflow.protocol.checkpoint_barrier import DeclineReason
from barrierflow.testing.harness import StreamTaskHarness, operator

# checkpoint id -> the delivery its barrier handed on; the task gets a copy of the sink
DELIVERIES: dict[int, Future[None]] = {}
WRITTEN: list[Any] = []


class BackgroundWriter(SinkWriter):
    def write(self, records: list[Any]) -> None:
        WRITTEN.extend(records)

    def prepare_commit(self, checkpoint_id: int) -> list[Any]:
        DELIVERIES.setdefault(checkpoint_id, Future())  # or the one a test made
        return []

    def flushing(self, checkpoint_id: int) -> Future[None] | None:
        return DELIVERIES[checkpoint_id]


class BackgroundSink(Sink):
    delivery_guarantee = DeliveryGuarantee.AT_LEAST_ONCE

    def create_writer(self, context: Any) -> SinkWriter:
        return BackgroundWriter()


def sink_task() -> StreamTaskHarness:
    DELIVERIES.clear()
    WRITTEN.clear()
    spec = operator(TransformationKind.SINK, BackgroundSink(), uid="sink")
    return StreamTaskHarness([spec], emits=False).open()


def test_the_checkpoint_is_acknowledged_once_the_delivery_is_done_and_the_task_goes_on():
    h = sink_task()
    h.records(0, [1, 2])
    h.barrier(0, 1)
    h.records(0, [3])
    h.run_until_idle()
    assert WRITTEN == [1, 2, 3]  # not held up by the delivery
    assert h.acknowledgements() == []
    DELIVERIES[1].set_result(None)  # on another thread, as a flush thread would
    h.run_until_idle()
    assert [a.checkpoint_id for a in h.acknowledgements()] == [1]
    h.close()


def test_a_failed_delivery_declines_the_checkpoint():
    h = sink_task()
    h.records(0, [1])
    h.barrier(0, 1)
    h.run_until_idle()
    DELIVERIES[1].set_exception(RuntimeError("2 records were not delivered"))
    h.run_until_idle()
    (decline,) = h.declines()
    assert decline.checkpoint_id == 1 and decline.reason is DeclineReason.SNAPSHOT_FAILED
    assert "2 records were not delivered" in decline.detail
    assert h.acknowledgements() == []
    h.close()


def test_a_delivery_done_by_the_barrier_acknowledges_with_the_state():
    h = sink_task()
    done: Future[None] = Future()
    done.set_result(None)
    DELIVERIES[1] = done
    h.records(0, [1])
    h.barrier(0, 1)
    h.run_until_idle()
    assert [a.checkpoint_id for a in h.acknowledgements()] == [1]
    h.close()
