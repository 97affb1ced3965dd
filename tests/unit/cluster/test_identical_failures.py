"""Poison records: a job whose attempts fail the same way on the same record stops restarting
after ``restart-strategy.max-identical-failures`` of them, naming the operator, the exception
and the record (on threads, without Spark); other failures are the restart strategy's."""

from __future__ import annotations

import pytest

from barrierflow.client.submission_context import SubmissionContext, installed
from barrierflow.cluster.identical_failures import IdenticalFailures
from barrierflow.common import Configuration, RestartStrategies
from barrierflow.control.messages import FailureSignature
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.errors import JobExecutionError
from barrierflow.testing.thread_deployer import ThreadExecutor

POISON = FailureSignature("'parse' (Map)", "ValueError", "5000")


def test_the_same_failure_in_a_row_ends_the_job_at_the_limit():
    failures = IdenticalFailures(limit=3)
    assert not failures.attempt_failed(POISON)
    assert not failures.attempt_failed(POISON)
    assert failures.attempt_failed(POISON)
    assert "operator 'parse' (Map) failed the same way in 3 consecutive attempts" in (
        failures.explain()
    )
    assert "on record 5000: ValueError" in failures.explain()


def test_another_failure_between_starts_the_count_again():
    failures = IdenticalFailures(limit=2)
    other = FailureSignature("'parse' (Map)", "ValueError", "5001")
    assert not failures.attempt_failed(POISON)
    assert not failures.attempt_failed(other)
    assert not failures.attempt_failed(None)  # a kill, a broker down: no record
    assert not failures.attempt_failed(POISON)
    assert failures.attempt_failed(POISON)


def test_failures_without_a_record_and_a_limit_of_0_never_end_the_job():
    unknown = IdenticalFailures(limit=3)
    assert not any(unknown.attempt_failed(None) for _ in range(10))
    off = IdenticalFailures(limit=0)
    assert not any(off.attempt_failed(POISON) for _ in range(10))


def refuse(value: int) -> int:
    if value == 77:
        raise ValueError(f"bad record {value}")
    return value


def test_a_job_failing_on_a_poison_record_stops_restarting_and_says_why(tmp_path):
    conf = Configuration({"rest.port": -1, "restart-strategy.max-identical-failures": 2})
    with installed(SubmissionContext(configuration=conf, executor=ThreadExecutor())):
        env = StreamExecutionEnvironment().set_parallelism(1)
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(100, 10))
    env.from_source(NumberSequenceSource(1, 200), "numbers").map(refuse).uid("parse").sink_to(
        DiscardingSink()
    )
    with pytest.raises(JobExecutionError) as failed:
        env.execute("poisoned")
    message = str(failed.value)
    assert "failed after 2 attempt(s)" in message
    assert "operator 'parse' (Map) failed the same way in 2 consecutive attempts" in message
    assert "on record 77: ValueError" in message
    assert "restart-strategy.max-identical-failures: 2" in message
