"""JobStatus and JobExecutionResult as PyFlink defines them."""

from __future__ import annotations

from barrierflow.common import JobExecutionResult, JobID, JobStatus

PYFLINK_VALUES = {
    "CREATED": 0,
    "RUNNING": 1,
    "FAILING": 2,
    "FAILED": 3,
    "CANCELLING": 4,
    "CANCELED": 5,
    "FINISHED": 6,
    "RESTARTING": 7,
    "SUSPENDED": 8,
    "RECONCILING": 9,
}


def test_job_status_has_pyflinks_members_and_values():
    assert {s.name: s.value for s in JobStatus} == PYFLINK_VALUES


def test_only_finished_canceled_and_failed_are_globally_terminal():
    terminal = {s.name for s in JobStatus if s.is_globally_terminal_state()}
    assert terminal == {"FINISHED", "CANCELED", "FAILED"}


def test_suspended_is_terminal_but_not_globally():
    terminal = {s.name for s in JobStatus if s.is_terminal_state()}
    assert terminal == {"FINISHED", "CANCELED", "FAILED", "SUSPENDED"}
    assert not JobStatus.SUSPENDED.is_globally_terminal_state()


def result():
    return JobExecutionResult(
        "a" * 32, "job", attempts=2, net_runtime_ms=1234, final_checkpoint=None
    )


def test_execution_result_gives_the_job_id_as_a_job_id():
    job_id = result().get_job_id()
    assert isinstance(job_id, JobID) and str(job_id) == "a" * 32


def test_execution_result_gives_the_net_runtime_in_milliseconds():
    assert result().get_net_runtime() == 1234


def test_a_job_without_accumulators_returns_what_pyflink_returns_for_none():
    assert result().get_all_accumulator_results() == {}
    assert result().get_accumulator_result("records") is None
