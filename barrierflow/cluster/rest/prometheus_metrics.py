"""The job's metrics in Prometheus' text format, with Flink's metric names.

A per-job ``CollectorRegistry`` (not prometheus-client's global one: two jobs on one driver
must not mix) holding one collector that reads the ``JobStatusView`` at each scrape. Names are
those of Flink's Prometheus reporter with ``barrierflow_`` in place of ``flink_``:

    flink_jobmanager_job_lastCheckpointDuration -> barrierflow_jobmanager_job_lastCheckpointDuration
    flink_taskmanager_job_task_numRecordsIn -> barrierflow_taskmanager_job_task_numRecordsIn

and Flink's labels: ``job_id``, ``job_name``; per subtask also ``task_id``, ``task_name``,
``subtask_index``, ``task_attempt_num``. As Flink's reporter does, counters are exported as
gauges (they start over when a restarted subtask does).

**Threading:** ``render`` from any thread (each scrape takes a snapshot of the view).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

from barrierflow.cluster.job_status_view import JobStatusView

PREFIX = "barrierflow"
JOB_SCOPE = f"{PREFIX}_jobmanager_job_"
TASK_SCOPE = f"{PREFIX}_taskmanager_job_task_"
JOB_LABELS = ("job_id", "job_name")
TASK_LABELS = (*JOB_LABELS, "task_id", "task_name", "subtask_index", "task_attempt_num")
OPERATOR_SCOPE = TASK_SCOPE + "operator_"
_UNSAFE = re.compile(r"[^A-Za-z0-9_]")


class JobMetricsCollector(Collector):
    def __init__(self, view: JobStatusView) -> None:
        self._view = view

    def collect(self) -> Iterator[GaugeMetricFamily]:
        job = self._view.snapshot()
        checkpoints = job.checkpoints
        latest = checkpoints.latest_completed
        restored = checkpoints.restored
        job_values = (job.job_id, job.job_name)

        def job_gauge(name: str, help_text: str, value: float) -> GaugeMetricFamily:
            gauge = GaugeMetricFamily(JOB_SCOPE + name, help_text, labels=JOB_LABELS)
            gauge.add_metric(job_values, value)
            return gauge

        yield job_gauge(
            "lastCheckpointDuration",
            "Duration of the last completed checkpoint in milliseconds (-1: none yet)",
            round(latest.duration_ms) if latest else -1,
        )
        yield job_gauge(
            "lastCheckpointSize",
            "Bytes the last completed checkpoint wrote (less than its full size when incremental)",
            latest.checkpointed_size if latest else -1,
        )
        yield job_gauge(
            "lastCheckpointFullSize",
            "Bytes of state the last completed checkpoint references",
            latest.state_size if latest else -1,
        )
        yield job_gauge(
            "lastCheckpointPersistedData",
            "Bytes of data in flight the last completed checkpoint stored (unaligned)",
            latest.persisted_data if latest else -1,
        )
        yield job_gauge(
            "lastCheckpointProcessedData",
            "Bytes processed during the alignment of the last completed checkpoint",
            latest.processed_data if latest else -1,
        )
        yield job_gauge(
            "numberOfCompletedCheckpoints",
            "Completed checkpoints and savepoints",
            checkpoints.num_completed,
        )
        yield job_gauge(
            "numberOfFailedCheckpoints", "Failed checkpoints and savepoints", checkpoints.num_failed
        )
        yield job_gauge(
            "numberOfInProgressCheckpoints",
            "Checkpoints and savepoints in progress",
            checkpoints.num_in_progress,
        )
        yield job_gauge(
            "totalNumberOfCheckpoints",
            "Checkpoints and savepoints triggered",
            checkpoints.num_completed + checkpoints.num_failed + checkpoints.num_in_progress,
        )
        yield job_gauge(
            "lastCheckpointRestoreTimestamp",
            "When the job last restored a checkpoint, in ms since the epoch (-1: never)",
            restored.restore_timestamp_ms if restored else -1,
        )
        yield job_gauge("numRestarts", "Restarts of the job since it started", job.num_restarts)
        yield job_gauge("uptime", "Milliseconds since the job started", job.duration_ms)

        per_subtask = {
            "numRecordsIn": ("Records the subtask took in", "records_in"),
            "numRecordsOut": ("Records the subtask emitted", "records_out"),
            "numRecordsInPerSecond": ("Records in per second", "records_in_per_s"),
            "numRecordsOutPerSecond": ("Records out per second", "records_out_per_s"),
            "busyTimeMsPerSecond": ("Milliseconds per second busy", "busy_ms_per_s"),
            "backPressuredTimeMsPerSecond": (
                "Milliseconds per second waiting for output credit",
                "backpressured_ms_per_s",
            ),
            "idleTimeMsPerSecond": ("Milliseconds per second waiting for input", "idle_ms_per_s"),
        }
        for name, (help_text, field) in per_subtask.items():
            gauge = GaugeMetricFamily(TASK_SCOPE + name, help_text, labels=TASK_LABELS)
            for v in job.vertices:
                for s in v.subtasks:
                    labels = (*job_values, v.id, v.name, str(s.subtask), str(job.attempt))
                    gauge.add_metric(labels, getattr(s, field))
            yield gauge
        yield self._debloated_buffer_size(job, job_values)
        yield from self._user_metrics(job, job_values)

    @staticmethod
    def _debloated_buffer_size(job: Any, job_values: tuple[str, ...]) -> GaugeMetricFamily:
        """Flink's ``debloatedBufferSize``, of the subtasks that have an input gate: in records
        (a buffer's size here; Flink's is in bytes), the configured size without debloating."""
        gauge = GaugeMetricFamily(
            TASK_SCOPE + "debloatedBufferSize",
            "Records per buffer the subtask's input gate asks its producers for",
            labels=TASK_LABELS,
        )
        for v in job.vertices:
            for s in v.subtasks:
                if s.debloated_buffer_size is not None:
                    labels = (*job_values, v.id, v.name, str(s.subtask), str(job.attempt))
                    gauge.add_metric(labels, s.debloated_buffer_size)
        return gauge

    @staticmethod
    def _user_metrics(job: Any, job_values: tuple[str, ...]) -> Iterator[GaugeMetricFamily]:
        """The program's metrics, one family per name as Flink's Prometheus reporter names
        them (``..._operator_<group>_<name>``), labelled with the operator."""
        families: dict[str, GaugeMetricFamily] = {}
        for v in job.vertices:
            for s in v.subtasks:
                labels = (*job_values, v.id, v.name, str(s.subtask), str(job.attempt))
                for operator, name, value in s.user_metrics:
                    family_name = OPERATOR_SCOPE + _UNSAFE.sub("_", name)
                    family = families.get(family_name)
                    if family is None:
                        family = families[family_name] = GaugeMetricFamily(
                            family_name,
                            f"{name}: a metric of the job's code",
                            labels=(*TASK_LABELS, "operator_name"),
                        )
                    family.add_metric((*labels, operator), value)
        yield from families.values()


def metrics_registry(view: JobStatusView) -> CollectorRegistry:
    """A registry of this job's metrics alone."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(JobMetricsCollector(view))
    return registry


def render(registry: CollectorRegistry) -> tuple[bytes, str]:
    """The registry's metrics and their content type, for ``GET /metrics``."""
    return generate_latest(registry), CONTENT_TYPE_LATEST
