"""``execute_async`` returns PyFlink's JobClient: every method returns a CompletableFuture, as
PyFlink programs expect (``client.get_job_execution_result().result()``)."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from types import SimpleNamespace

import pytest

from barrierflow.api.job_client import JobClient, JobID, SavepointFormatType
from barrierflow.cluster.job_outcome import JobExecutionResult, JobStatus
from barrierflow.errors import JobCanceledError, SavepointError
from barrierflow.protocol.checkpoint_barrier import SnapshotFormat


class FakeJobMaster:
    """Runs until cancelled or stopped; records savepoint requests."""

    def __init__(self) -> None:
        self.plan = SimpleNamespace(job_id="ab" * 16)
        self.status = JobStatus.RUNNING
        self._stop = threading.Event()
        self._outcome: BaseException | None = None
        self.savepoints: list[tuple] = []

    def run(self) -> JobExecutionResult:
        self._stop.wait(10)
        if self._outcome is not None:
            raise self._outcome
        return JobExecutionResult(self.plan.job_id, "job", 1, 5, None)

    def cancel(self) -> None:
        self.status = JobStatus.CANCELED
        self._outcome = JobCanceledError("cancelled")
        self._stop.set()

    def trigger_savepoint(self, target, snapshot_format, stop=False, drain=False) -> Future:
        self.savepoints.append((target, snapshot_format, stop, drain))
        future: Future = Future()
        if target == "broken":
            future.set_exception(SavepointError("no space left"))
            return future
        future.set_result(f"{target}/savepoint-1")
        if stop:
            self.status = JobStatus.FINISHED
            self._stop.set()
        return future


def test_the_result_of_a_job_is_a_future_of_its_execution_result():
    job_master = FakeJobMaster()
    client = JobClient(job_master)
    assert client.get_job_id() == JobID("ab" * 16) and str(client.get_job_id()) == "ab" * 16
    assert client.get_job_status().result() is JobStatus.RUNNING
    future = client.get_job_execution_result()
    assert not future.done()
    job_master._stop.set()
    assert future.result(5).get_net_runtime() == 5
    assert client.done() and future.exception() is None


def test_cancel_completes_when_the_job_ended_and_the_result_raises_the_cancellation():
    client = JobClient(FakeJobMaster())
    assert client.cancel().result(5) is None
    assert client.get_job_status().result() is JobStatus.CANCELED
    with pytest.raises(JobCanceledError):
        client.get_job_execution_result().result(5)


def test_savepoints_are_futures_of_their_path_and_a_failure_is_its_error():
    job_master = FakeJobMaster()
    client = JobClient(job_master)
    running = client.trigger_savepoint("/sp", SavepointFormatType.NATIVE)
    assert running.result(5) == "/sp/savepoint-1"
    with pytest.raises(SavepointError, match="no space left"):
        client.trigger_savepoint("broken").result(5)
    stopped = client.stop_with_savepoint(True, "/stop")
    assert stopped.result(5) == "/stop/savepoint-1" and client.done()
    assert job_master.savepoints[0] == ("/sp", SnapshotFormat.NATIVE, False, False)
    assert job_master.savepoints[-1] == ("/stop", SnapshotFormat.CANONICAL, True, True)


def test_stop_with_savepoint_takes_pyflinks_arguments_in_pyflinks_order():
    client = JobClient(FakeJobMaster())
    with pytest.raises(TypeError, match="takes a bool first"):
        client.stop_with_savepoint("/savepoints")
    client.cancel().result(5)


def test_a_job_has_no_accumulators():
    client = JobClient(FakeJobMaster())
    assert client.get_accumulators().result() == {}
    client.cancel().result(5)
