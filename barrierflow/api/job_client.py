"""PyFlink's ``JobClient``: a job running in the background (``env.execute_async``).

Its methods are PyFlink's and, as there, return ``CompletableFuture``s:
``client.get_job_execution_result().result()`` waits for the job's end.

**Threading:** the job runs on a thread of its own (its JobMaster's loop); any thread may call
the client.
"""

from __future__ import annotations

import enum
import threading
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from barrierflow.api.completable_future import CompletableFuture
from barrierflow.cluster.job_outcome import JobExecutionResult, JobID, JobStatus
from barrierflow.protocol.checkpoint_barrier import SnapshotFormat

if TYPE_CHECKING:
    from barrierflow.cluster.job_master import JobMaster


class SavepointFormatType(enum.Enum):
    """CANONICAL: the key-group format, restorable into either state backend. NATIVE: the
    backend's own (RocksDB: its SST files), faster to take and restore for large state."""

    CANONICAL = "canonical"
    NATIVE = "native"


class JobClient:
    def __init__(self, job_master: JobMaster) -> None:
        self._job_master = job_master
        self._ended: Future[JobExecutionResult] = Future()
        self._thread = threading.Thread(target=self._run, name="jobmaster", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._ended.set_result(self._job_master.run())
        except BaseException as e:  # noqa: BLE001 - raised by get_job_execution_result().result()
            self._ended.set_exception(e)

    def get_job_id(self) -> JobID:
        return JobID(self._job_master.plan.job_id)

    def get_job_status(self) -> CompletableFuture[JobStatus]:
        return CompletableFuture.completed(self._job_master.status)

    def done(self) -> bool:
        """Whether the job ended (finished, failed for good or cancelled)."""
        return self._ended.done()

    def cancel(self) -> CompletableFuture[None]:
        """Cancels the job; the future is done once it ended (CANCELED, or another end it
        reached first)."""
        self._job_master.cancel()
        cancelled: Future[None] = Future()
        self._ended.add_done_callback(lambda _: cancelled.set_result(None))
        return CompletableFuture(cancelled)

    def trigger_savepoint(
        self,
        savepoint_directory: str | None = None,
        format_type: SavepointFormatType = SavepointFormatType.CANONICAL,
    ) -> CompletableFuture[str]:
        """Takes a savepoint into a new directory under ``savepoint_directory`` (None:
        ``execution.checkpointing.savepoint-dir``) while the job goes on. The future gets its
        path, or a ``SavepointError`` with the reason it failed."""
        snapshot_format = SnapshotFormat(format_type.value)
        return CompletableFuture(
            self._job_master.trigger_savepoint(savepoint_directory, snapshot_format)
        )

    def stop_with_savepoint(
        self,
        advance_to_end_of_event_time: bool = False,
        savepoint_directory: str | None = None,
        format_type: SavepointFormatType = SavepointFormatType.CANONICAL,
    ) -> CompletableFuture[str]:
        """Takes a savepoint, stops the sources at it and ends the job (FINISHED), its sinks
        committing everything up to it; ``advance_to_end_of_event_time`` first ends the input
        (``stop --drain``), so that windows and timers fire and operators flush what they
        buffer. The future gets the savepoint's path once the job ended."""
        if not isinstance(advance_to_end_of_event_time, bool):
            raise TypeError(
                "stop_with_savepoint(advance_to_end_of_event_time, savepoint_directory) takes "
                f"a bool first, as PyFlink's, got {advance_to_end_of_event_time!r}"
            )
        savepoint = self._job_master.trigger_savepoint(
            savepoint_directory,
            SnapshotFormat(format_type.value),
            stop=True,
            drain=advance_to_end_of_event_time,
        )
        stopped: Future[str] = Future()

        def on_savepoint(taken: Future[str]) -> None:
            if (error := taken.exception()) is not None:
                stopped.set_exception(error)
            else:
                self._ended.add_done_callback(lambda _: stopped.set_result(taken.result()))

        savepoint.add_done_callback(on_savepoint)
        return CompletableFuture(stopped)

    def rescale(
        self, parallelism: int | None = None, per_operator: dict[str, int] | None = None
    ) -> CompletableFuture[Any]:
        """Changes the running job's parallelism (barrierflow's; Flink changes it through its
        REST API): ``parallelism`` for every operator that has no parallelism of its own,
        ``per_operator`` (uid -> parallelism) for some, whose chains follow. The job takes a
        checkpoint and restarts from it at the new parallelism; the future gets the rescale's
        record (its downtime too) once the job runs so, or ``RescaleRefused`` saying why it
        did not change."""
        return CompletableFuture(
            self._job_master.rescale(parallelism, per_operator, reason="JobClient.rescale")
        )

    def get_accumulators(self) -> CompletableFuture[dict[str, Any]]:
        """PyFlink's accumulators are Java's; a barrierflow job has none (its user metrics
        are at ``/metrics``)."""
        return CompletableFuture.completed({})

    def get_job_execution_result(self) -> CompletableFuture[JobExecutionResult]:
        """Done when the job ended: its result, or the error it failed with
        (``JobExecutionError``, ``JobCanceledError``)."""
        return CompletableFuture(self._ended)
