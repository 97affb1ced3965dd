"""Operator events between an operator and its coordinator on the JobMaster: the task routes
an OperatorEventToTask through its chain to the operator with that uid; the operator answers
through its context, which sends an OperatorEventToCoordinator; an operator that takes no
events, or a uid the chain does not hold, fails with an error naming it."""

from __future__ import annotations

import pytest

from barrierflow.control import messages as msg
from barrierflow.graph.transformation import TransformationKind
from barrierflow.runtime import operator_chain
from barrierflow.runtime.operator_factory import create_operator
from barrierflow.runtime.operators import MapOperator, OperatorContext, OperatorEventError
from barrierflow.testing.harness import OperatorHarness, StreamTaskHarness, operator


class Echo(MapOperator):
    """Answers each event with its payload reversed."""

    def open(self, ctx: OperatorContext) -> None:
        super().open(ctx)
        self._context = ctx

    def handle_operator_event(self, payload: bytes) -> None:
        self._context.send_operator_event(payload[::-1])


@pytest.fixture
def task(monkeypatch) -> StreamTaskHarness:
    def create(spec):
        return Echo(spec) if spec.uid == "echo" else create_operator(spec)

    monkeypatch.setattr(operator_chain, "create_operator", create)
    chain = [
        operator(TransformationKind.MAP, lambda v: v, uid="first"),
        operator(TransformationKind.MAP, lambda v: v, uid="echo"),
    ]
    h = StreamTaskHarness(chain).open()
    yield h
    h.close()


def test_an_event_reaches_the_operator_with_its_uid_and_its_answer_goes_to_the_job_master(task):
    task.operator_event("echo", b"split-1")
    task.run_until_idle()
    (answer,) = [
        m for m in task.sent_to_job_master() if isinstance(m, msg.OperatorEventToCoordinator)
    ]
    d = task.descriptor
    assert answer == msg.OperatorEventToCoordinator(
        d.attempt, d.vertex, d.subtask, "echo", b"1-tilps"
    )


def test_an_operator_that_takes_no_events_refuses_one_naming_itself(task):
    task.operator_event("first", b"x")
    with pytest.raises(OperatorEventError, match=r"operator 'first'.*takes none"):
        task.run_until_idle()


def test_an_event_for_a_uid_the_chain_does_not_hold_names_the_uid_and_the_chain(task):
    task.operator_event("elsewhere", b"x")
    with pytest.raises(OperatorEventError, match=r"'elsewhere'.*\['first', 'echo'\]"):
        task.run_until_idle()


def test_an_operator_run_alone_cannot_send_an_event():
    h = OperatorHarness(operator(TransformationKind.MAP, lambda v: v, uid="alone"))
    with pytest.raises(OperatorEventError, match="takes none"):
        h.operator_event(b"x")
    context = OperatorContext(0, 1, 128, 1, "alone (1/1)", False, None, None)
    with pytest.raises(OperatorEventError, match="no JobMaster"):
        context.send_operator_event(b"x")


def test_operator_events_cross_the_control_channel_unchanged():
    for message in (
        msg.OperatorEventToTask(3, "v1", 2, "source", b"\x00\xffsplits"),
        msg.OperatorEventToCoordinator(3, "v1", 2, "source", b"request"),
    ):
        assert msg.decode(msg.encode(message)) == message
