"""What ``execute_and_collect`` returns: the job's results as they come, on the driver.

The job runs in the background (``execute_async``); its sink sends the records to a
``QueueCollector``, from which this iterator reads until the job ended and every record was
read (a job's records all reach the driver before it ends). A job that failed raises its error
from the iterator. Closing the iterator early cancels the job.
"""

from __future__ import annotations

import contextlib
import queue
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from barrierflow.cluster import collected_records
from barrierflow.cluster.collected_records import QueueCollector
from barrierflow.errors import JobCanceledError

if TYPE_CHECKING:
    from barrierflow.api.job_client import JobClient


class CloseableIterator(Iterator[Any]):
    def __init__(self, client: JobClient, collector: QueueCollector) -> None:
        self._client = client
        self._collector = collector
        self._closed = False

    def __iter__(self) -> CloseableIterator:
        return self

    def __next__(self) -> Any:
        records = self._collector.records
        while not self._closed:
            try:
                return records.get(timeout=0.05)
            except queue.Empty:
                if not self._client.done():
                    continue
            try:
                return records.get_nowait()
            except queue.Empty:
                self._closed = True
                collected_records.unregister(self._collector.id)
                self._client.get_job_execution_result().result()  # the job's error, if any
        raise StopIteration

    def next(self) -> Any:
        """PyFlink's name of ``next(iterator)``."""
        return next(self)

    def close(self) -> None:
        """Stops reading; a job still running is cancelled."""
        if self._closed:
            return
        self._closed = True
        collected_records.unregister(self._collector.id)
        if not self._client.done():
            self._client.cancel()
            with contextlib.suppress(JobCanceledError):
                self._client.get_job_execution_result().result()

    def __enter__(self) -> CloseableIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
