"""The REST API's responses in Flink's JSON shape, built from a ``JobStatusSnapshot``.

Field names and nesting follow Flink's REST API (``/jobs/overview``, ``/jobs/:jobid``,
``/jobs/:jobid/checkpoints``, ``.../checkpoints/details/:checkpointid`` and its
``subtasks/:vertexid``, ``.../checkpoints/config``, ``/jobs/:jobid/exceptions``,
``.../vertices/:vertexid/backpressure``), so that tools written against Flink's read them.
Where we add something Flink does not have (the per-vertex rates the web UI draws), it is an
extra key; docs/adr/0010-rest-api-and-metrics.md lists the differences. Durations in ms, sizes
in bytes, timestamps in ms since the epoch, as in Flink. Performs no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from barrierflow.checkpoint.history import CheckpointRecord, CheckpointStatus
from barrierflow.checkpoint.metadata import SubtaskCheckpointStats
from barrierflow.cluster.job_status import (
    BackpressureLevel,
    CheckpointSettings,
    CheckpointStatistics,
    JobStatusSnapshot,
    PendingCheckpointStatus,
    TaskState,
    VertexStatus,
    is_savepoint,
)
from barrierflow.protocol.checkpoint_barrier import CheckpointKind
from barrierflow.state.backends.registry import backend_kind

JSON = dict[str, Any]

LONG_MAX = 0x7FFFFFFFFFFFFFFF  # Flink's interval of a job without periodic checkpoints

# Flink's task states, every one counted (zeros included) as Flink does.
_FLINK_TASK_STATES = (
    "CREATED",
    "SCHEDULED",
    "DEPLOYING",
    "RUNNING",
    "FINISHED",
    "CANCELING",
    "CANCELED",
    "FAILED",
    "RECONCILING",
    "INITIALIZING",
)
_SHIP_STRATEGIES = {
    "forward": "FORWARD",
    "rebalance": "REBALANCE",
    "rescale": "RESCALE",
    "shuffle": "SHUFFLE",
    "broadcast": "BROADCAST",
    "key_groups": "HASH",
    "custom": "CUSTOM",
}


# --- jobs -------------------------------------------------------------------------------------


def _task_counts(vertices: Iterable[VertexStatus]) -> JSON:
    counts = dict.fromkeys(_FLINK_TASK_STATES, 0)
    for v in vertices:
        for state, n in v.count_states().items():
            counts[state.value] += n
    return {k.lower(): n for k, n in counts.items()} | {"total": sum(counts.values())}


def jobs_overview(job: JobStatusSnapshot) -> JSON:
    """``GET /jobs/overview``: this JobMaster runs one job."""
    return {
        "jobs": [
            {
                "jid": job.job_id,
                "name": job.job_name,
                "state": job.state,
                "start-time": job.start_time_ms,
                "end-time": job.end_time_ms,
                "duration": job.duration_ms,
                "last-modification": job.now_ms,
                "tasks": _task_counts(job.vertices),
            }
        ]
    }


def _vertex_state(vertex: VertexStatus) -> str:
    counts = vertex.count_states()
    for state in (TaskState.FAILED, TaskState.CANCELED, TaskState.DEPLOYING, TaskState.RUNNING):
        if counts[state]:
            return state.value
    return TaskState.FINISHED.value


def job_details(job: JobStatusSnapshot) -> JSON:
    """``GET /jobs/:jobid``: the job, its vertices with their metrics, and its plan."""
    vertices = []
    for v in job.vertices:
        counts = v.count_states()
        vertices.append(
            {
                "id": v.id,
                "name": v.name,
                "maxParallelism": job.max_parallelism,
                "parallelism": v.parallelism,
                "status": _vertex_state(v),
                "start-time": job.start_time_ms,
                "end-time": job.end_time_ms,
                "duration": job.duration_ms,
                "tasks": {s.value: counts[s] for s in TaskState},
                "metrics": {
                    "read-bytes": 0,
                    "read-bytes-complete": False,
                    "write-bytes": 0,
                    "write-bytes-complete": False,
                    "read-records": v.records_in,
                    "read-records-complete": True,
                    "write-records": v.records_out,
                    "write-records-complete": True,
                    "accumulated-backpressured-time": round(
                        sum(s.backpressured_ms for s in v.subtasks)
                    ),
                    "accumulated-idle-time": round(sum(s.idle_ms for s in v.subtasks)),
                    "accumulated-busy-time": round(sum(s.busy_ms for s in v.subtasks)),
                    # barrierflow's additions, for the web UI (Flink's asks its metrics API):
                    "read-records-per-second": v.records_in_per_s,
                    "write-records-per-second": v.records_out_per_s,
                    "backpressure-ratio": v.backpressure_ratio,
                    "busy-ratio": v.busy_ratio,
                    "backpressure-level": v.backpressure.value,
                },
            }
        )
    return {
        "jid": job.job_id,
        "name": job.job_name,
        "isStoppable": False,
        "state": job.state,
        "job-type": "STREAMING",
        "start-time": job.start_time_ms,
        "end-time": job.end_time_ms,
        "duration": job.duration_ms,
        "maxParallelism": job.max_parallelism,
        "now": job.now_ms,
        "attempt": job.attempt,
        "timestamps": {job.state: job.now_ms, "CREATED": job.start_time_ms},
        "vertices": vertices,
        "status-counts": {s: n for s, n in _task_counts(job.vertices).items() if s != "total"},
        "plan": _plan(job),
        # barrierflow's: who leads the job under high availability (null without it)
        "high-availability": None
        if job.leader is None
        else {
            "cluster-id": job.leader.cluster_id,
            "leader-epoch": job.leader.epoch,
            "leader-since": job.leader.since_ms,
        },
    }


def _plan(job: JobStatusSnapshot) -> JSON:
    return {
        "jid": job.job_id,
        "name": job.job_name,
        "type": "STREAMING",
        "nodes": [
            {
                "id": v.id,
                "parallelism": v.parallelism,
                "operator": "",
                "operator_strategy": "",
                "description": v.name,
                "inputs": [
                    {
                        "num": n,
                        "id": i.vertex,
                        "ship_strategy": _SHIP_STRATEGIES.get(i.ship_strategy, i.ship_strategy),
                        "exchange": "pipelined_bounded",
                    }
                    for n, i in enumerate(v.inputs)
                ],
                "optimizer_properties": {},
            }
            for v in job.vertices
        ],
    }


def backpressure(job: JobStatusSnapshot, vertex: VertexStatus) -> JSON:
    """``GET /jobs/:jobid/vertices/:vertexid/backpressure``: measured from busy, idle and
    back-pressured time, as Flink since 1.13 (no stack sampling)."""
    return {
        "status": "ok",
        "backpressure-level": vertex.backpressure.value,
        "end-timestamp": job.now_ms,
        "subtasks": [
            {
                "subtask": s.subtask,
                "attempt-number": job.attempt,
                "backpressure-level": BackpressureLevel.of(s.backpressured_ms_per_s / 1000).value,
                "ratio": s.backpressured_ms_per_s / 1000,
                "idleRatio": s.idle_ms_per_s / 1000,
                "busyRatio": s.busy_ms_per_s / 1000,
            }
            for s in vertex.subtasks
        ],
    }


def exceptions(job: JobStatusSnapshot) -> JSON:
    """``GET /jobs/:jobid/exceptions``: the failures of attempts, newest first."""
    entries: list[dict[str, Any]] = [
        {
            "exceptionName": e.error.split(":", 1)[0],
            "stacktrace": e.traceback or e.error,
            "timestamp": e.timestamp_ms,
            "taskName": None,
            "location": None,
            "endpoint": None,
            "taskManagerId": None,
            "failureLabels": {},
            "concurrentExceptions": [],
            "message": e.error,  # barrierflow: the error without its traceback
            "attempt": e.attempt,
        }
        for e in reversed(job.exceptions)
    ]
    root = entries[0] if entries else None
    return {
        "root-exception": root["stacktrace"] if root else None,
        "timestamp": root["timestamp"] if root else None,
        "all-exceptions": [],
        "truncated": False,
        "exceptionHistory": {"entries": entries, "truncated": False},
    }


# --- checkpoints ------------------------------------------------------------------------------


def summary(values: Iterable[float]) -> JSON:
    """Flink's ``StatsSummaryDto``: min, max, avg and percentiles (nearest rank)."""
    ordered = sorted(values)
    if not ordered:
        keys = ("min", "max", "avg", "p50", "p90", "p95", "p99", "p999")
        return dict.fromkeys(keys, 0)

    def percentile(quantile: float) -> float:
        return ordered[min(len(ordered) - 1, max(0, math.ceil(quantile * len(ordered)) - 1))]

    return {
        "min": ordered[0],
        "max": ordered[-1],
        "avg": round(sum(ordered) / len(ordered)),
        "p50": percentile(0.5),
        "p90": percentile(0.9),
        "p95": percentile(0.95),
        "p99": percentile(0.99),
        "p999": percentile(0.999),
    }


def checkpoint_type(record: CheckpointRecord) -> str:
    if record.kind is CheckpointKind.SAVEPOINT:
        return "SAVEPOINT"
    if is_savepoint(record):
        return "SYNC_SAVEPOINT"  # stop with a savepoint
    return "UNALIGNED_CHECKPOINT" if record.unaligned else "CHECKPOINT"


def checkpoint_entry(
    record: CheckpointRecord,
    vertices: tuple[VertexStatus, ...],
    acks: Mapping[tuple[str, int], int] | None,
) -> JSON:
    """One completed or failed checkpoint, as in Flink's history and details."""
    completed = record.status is CheckpointStatus.COMPLETED
    latest_ack = max(acks.values()) if acks else record.end_timestamp_ms
    entry: JSON = {
        "className": ".CompletedCheckpointStatistics"
        if completed
        else ".FailedCheckpointStatistics",
        "id": record.checkpoint_id,
        "status": record.status.value,
        "is_savepoint": is_savepoint(record),
        "savepointFormat": record.snapshot_format.value.upper() if is_savepoint(record) else None,
        "trigger_timestamp": record.trigger_timestamp_ms,
        "latest_ack_timestamp": latest_ack if record.num_acknowledged else -1,
        "checkpointed_size": record.checkpointed_size,
        "state_size": record.state_size,
        "end_to_end_duration": round(record.duration_ms),
        "alignment_buffered": 0,
        "processed_data": record.processed_data,
        "persisted_data": record.persisted_data,
        "num_subtasks": record.num_tasks,
        "num_acknowledged_subtasks": record.num_acknowledged,
        "checkpoint_type": checkpoint_type(record),
        "tasks": {
            v.id: _task_entry(record, v, acks)["stats"] for v in vertices if v.id in _ids(record)
        },
    }
    if completed:
        entry["external_path"] = record.external_path
        entry["discarded"] = False
    else:
        entry["failure_timestamp"] = record.end_timestamp_ms
        entry["failure_message"] = record.failure_reason
    return entry


def _ids(record: CheckpointRecord) -> set[str]:
    return {s.vertex for s in record.subtasks}


def pending_entry(pending: PendingCheckpointStatus) -> JSON:
    savepoint = pending.kind in (
        CheckpointKind.SAVEPOINT,
        CheckpointKind.SUSPEND,
        CheckpointKind.TERMINATE,
    )
    return {
        "className": ".PendingCheckpointStatistics",
        "id": pending.checkpoint_id,
        "status": "IN_PROGRESS",
        "is_savepoint": savepoint,
        "trigger_timestamp": pending.trigger_timestamp_ms,
        "num_subtasks": pending.num_tasks,
        "num_acknowledged_subtasks": pending.num_acknowledged,
        "checkpoint_type": "SAVEPOINT" if savepoint else "CHECKPOINT",
        "tasks": {},
    }


def checkpoints(job: JobStatusSnapshot) -> JSON:
    """``GET /jobs/:jobid/checkpoints``: counts, summary, latest, history (newest first)."""
    stats = job.checkpoints
    done = [r for r in stats.history if r.status is CheckpointStatus.COMPLETED]

    def entry(record: CheckpointRecord | None) -> JSON | None:
        if record is None:
            return None
        return checkpoint_entry(
            record, job.vertices, stats.ack_timestamps.get(record.checkpoint_id)
        )

    restored = stats.restored
    return {
        "counts": {
            "restored": stats.num_restored,
            "total": stats.num_completed + stats.num_failed + stats.num_in_progress,
            "in_progress": stats.num_in_progress,
            "completed": stats.num_completed,
            "failed": stats.num_failed,
        },
        "summary": {
            "checkpointed_size": summary(r.checkpointed_size for r in done),
            "state_size": summary(r.state_size for r in done),
            "end_to_end_duration": summary(round(r.duration_ms) for r in done),
            "alignment_buffered": summary(0 for _ in done),
            "processed_data": summary(r.processed_data for r in done),
            "persisted_data": summary(r.persisted_data for r in done),
        },
        "latest": {
            "completed": entry(stats.latest_completed),
            "savepoint": entry(stats.latest_savepoint),
            "failed": entry(stats.latest_failed),
            "restored": None
            if restored is None
            else {
                "id": restored.checkpoint_id,
                "restore_timestamp": restored.restore_timestamp_ms,
                "is_savepoint": restored.is_savepoint,
                "external_path": restored.external_path,
            },
        },
        "history": [pending_entry(p) for p in reversed(stats.in_progress)]
        + [entry(r) for r in reversed(stats.history)],
    }


def checkpoint_details(job: JobStatusSnapshot, checkpoint_id: int) -> JSON | None:
    """``GET /jobs/:jobid/checkpoints/details/:checkpointid``; None: not in the history."""
    stats: CheckpointStatistics = job.checkpoints
    record = stats.record(checkpoint_id)
    if record is None:
        pending = next((p for p in stats.in_progress if p.checkpoint_id == checkpoint_id), None)
        return pending_entry(pending) if pending is not None else None
    return checkpoint_entry(record, job.vertices, stats.ack_timestamps.get(checkpoint_id))


def _task_entry(
    record: CheckpointRecord,
    vertex: VertexStatus,
    acks: Mapping[tuple[str, int], int] | None,
) -> JSON:
    """One vertex's part of a checkpoint: its totals (``stats``) and its subtasks."""
    mine: dict[int, SubtaskCheckpointStats] = {
        s.subtask: s for s in record.subtasks if s.vertex == vertex.id
    }
    subtasks = []
    durations = []
    for index in range(vertex.parallelism):
        s = mine.get(index)
        if s is None:
            subtasks.append({"index": index, "status": "pending_or_failed"})
            continue
        ack = (acks or {}).get((vertex.id, index))
        if ack is not None:
            duration = ack - record.trigger_timestamp_ms
        else:  # the history of an earlier JobMaster has no acknowledgement times
            duration = round(s.start_delay_ms + s.alignment_ms + s.sync_ms + s.async_ms)
        durations.append(duration)
        subtasks.append(
            {
                "index": index,
                "status": "completed",
                "ack_timestamp": ack if ack is not None else -1,
                "end_to_end_duration": duration,
                "state_size": s.state_size,
                "checkpointed_size": s.checkpointed_size,
                "checkpoint": {"sync": round(s.sync_ms), "async": round(s.async_ms)},
                "alignment": {
                    "buffered": 0,
                    "processed": s.processed_data,
                    "persisted": s.persisted_data,
                    "duration": round(s.alignment_ms),
                },
                "start_delay": round(s.start_delay_ms),
                "unaligned_checkpoint": s.unaligned,
                "aborted": False,
            }
        )
    done = list(mine.values())
    known_acks = [a for (v, _), a in (acks or {}).items() if v == vertex.id]
    stats = {
        "id": vertex.id,
        "status": record.status.value,
        "latest_ack_timestamp": max(known_acks) if known_acks else -1,
        "checkpointed_size": sum(s.checkpointed_size for s in done),
        "state_size": sum(s.state_size for s in done),
        "end_to_end_duration": max(durations, default=0),
        "alignment_buffered": 0,
        "processed_data": sum(s.processed_data for s in done),
        "persisted_data": sum(s.persisted_data for s in done),
        "num_subtasks": vertex.parallelism,
        "num_acknowledged_subtasks": len(done),
    }
    return {
        "stats": stats,
        "summary": {
            "state_size": summary(s.state_size for s in done),
            "checkpointed_size": summary(s.checkpointed_size for s in done),
            "end_to_end_duration": summary(durations),
            "checkpoint_duration": {
                "sync": summary(round(s.sync_ms) for s in done),
                "async": summary(round(s.async_ms) for s in done),
            },
            "alignment": {
                "buffered": summary(0 for _ in done),
                "processed": summary(s.processed_data for s in done),
                "persisted": summary(s.persisted_data for s in done),
                "duration": summary(round(s.alignment_ms) for s in done),
            },
            "start_delay": summary(round(s.start_delay_ms) for s in done),
        },
        "subtasks": subtasks,
    }


def checkpoint_subtasks(job: JobStatusSnapshot, checkpoint_id: int, vertex_id: str) -> JSON | None:
    """``GET /jobs/:jobid/checkpoints/details/:checkpointid/subtasks/:vertexid``: per subtask
    start delay, alignment, sync and async duration, persisted and processed data."""
    record = job.checkpoints.record(checkpoint_id)
    vertex = job.vertex(vertex_id)
    if record is None or vertex is None:
        return None
    task = _task_entry(record, vertex, job.checkpoints.ack_timestamps.get(checkpoint_id))
    return task["stats"] | {"summary": task["summary"], "subtasks": task["subtasks"]}


def checkpoint_config(settings: CheckpointSettings) -> JSON:
    """``GET /jobs/:jobid/checkpoints/config``."""
    return {
        "mode": "exactly_once" if settings.exactly_once else "at_least_once",
        "interval": settings.interval_ms if settings.enabled else LONG_MAX,
        "timeout": settings.timeout_ms,
        "min_pause": settings.min_pause_ms,
        "max_concurrent": settings.max_concurrent,
        "externalization": {
            "enabled": settings.storage_uri is not None,
            "delete_on_cancellation": not settings.retain_on_cancel,
        },
        "state_backend": backend_kind(settings.state_backend).rest_class,
        "checkpoint_storage": "FileSystemCheckpointStorage"
        if settings.storage_uri
        else "JobManagerCheckpointStorage",
        "unaligned_checkpoints": settings.unaligned,
        "tolerable_failed_checkpoints": settings.tolerable_failures,
        "aligned_checkpoint_timeout": settings.aligned_timeout_ms,
        "checkpoints_after_tasks_finish": settings.checkpoints_after_tasks_finish,
        "state_changelog_enabled": False,
        "changelog_periodic_materialization_interval": -1,
        "changelog_storage": "memory",
        # barrierflow's additions:
        "incremental": settings.incremental,
        "num_retained": settings.num_retained,
        "checkpoint_directory": settings.storage_uri,
        "savepoint_directory": settings.savepoint_dir,
    }


def error(*messages: str) -> JSON:
    """Flink's error body."""
    return {"errors": list(messages)}


def resource_requirements(job: JobStatusSnapshot) -> JSON:
    """``GET /jobs/:jobid/resource-requirements``: each vertex's parallelism, as Flink's
    adaptive scheduler shows it (lower bound 1, upper bound the parallelism it runs at)."""
    return {
        v.id: {"parallelism": {"lowerBound": 1, "upperBound": v.parallelism}} for v in job.vertices
    }


def rescales(job: JobStatusSnapshot) -> JSON:
    """``GET /jobs/:jobid/rescales`` (barrierflow's, after FLIP-495): the rescale history,
    newest first."""
    return {"rescales": [msgspec.to_builtins(r) for r in reversed(job.rescales)]}
