"""Every configuration option barrierflow reads: Flink 2.x key, type, default, 1.x aliases.

Values arrive as strings (YAML scalars, ``-D key=value``) or as Python values; each option parses
and validates its own, and an error names the key and what it accepts.
Performs no I/O.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any

from barrierflow.api.checkpoint_config import ExternalizedCheckpointRetention
from barrierflow.cluster.scaling.autoscaler_settings import AutoscalerSettings
from barrierflow.config_option import Option, parse_duration_ms, parse_memory_bytes
from barrierflow.errors import ConfigurationError
from barrierflow.state.backends import registry as state_backends


def _parse_int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError("an integer, not a boolean")
    if isinstance(value, int):
        return value
    try:
        return int(str(value).strip())
    except ValueError:
        raise ValueError("an integer") from None


def _parse_float(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError("a number, not a boolean")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError("a number") from None


def _parse_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "false"):
        return text == "true"
    raise ValueError("true or false")


def _parse_str(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("a non-empty string")
    return value.strip()


def _parse_parameters(value: Any) -> dict[str, str]:
    """A mapping, or Flink's map syntax ``key1:value1,key2:value2``."""
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items()}
    pairs = [p for p in str(value).split(",") if p.strip()]
    if not all(":" in p for p in pairs):
        raise ValueError("a mapping, or key:value pairs separated by commas")
    return {k.strip(): v.strip() for k, v in (p.split(":", 1) for p in pairs)}


def _choice(*choices: str) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        text = str(value).strip()
        for choice in choices:
            if text.lower() == choice.lower():
                return choice
        raise ValueError("one of " + ", ".join(choices))

    return parse


_CP = "execution.checkpointing."
_RS = "restart-strategy."
_AS = "job.autoscaler."
_AUTOSCALER = AutoscalerSettings()  # the autoscaler's defaults are its settings' own


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


OPTIONS: tuple[Option, ...] = (
    Option(_CP + "interval", parse_duration_ms, None, "checkpoint interval; unset: disabled",
           check=lambda v: v >= 10, check_text="the interval must be at least 10 ms"),
    Option(_CP + "mode", _choice("EXACTLY_ONCE", "AT_LEAST_ONCE"), "EXACTLY_ONCE",
           "aligned (exactly-once) or unaligned counting (at-least-once) barriers"),
    Option(_CP + "timeout", parse_duration_ms, 600_000, "abort a checkpoint running longer",
           check=lambda v: v > 0, check_text="the timeout must be positive"),
    Option(_CP + "min-pause", parse_duration_ms, 0, "minimum time from a completion to the "
           "next trigger", check=lambda v: v >= 0, check_text="must not be negative"),
    Option(_CP + "max-concurrent-checkpoints", _parse_int, 1, "checkpoints in flight at once",
           check=lambda v: v >= 1, check_text="must be at least 1"),
    Option(_CP + "tolerable-failed-checkpoints", _parse_int, 0, "consecutive checkpoint "
           "failures tolerated before the job fails", check=lambda v: v >= 0,
           check_text="must not be negative"),
    Option(_CP + "externalized-checkpoint-retention",
           _choice(*(r.value for r in ExternalizedCheckpointRetention)),
           ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS.value,
           "what happens to retained checkpoints when the job is canceled"),
    Option(_CP + "checkpoints-after-tasks-finish", _parse_bool, True,
           "keep checkpointing after some tasks finished"),
    Option(_CP + "dir", _parse_str, None, "checkpoint storage (path or URI)",
           deprecated_keys=("state.checkpoints.dir",)),
    Option(_CP + "savepoint-dir", _parse_str, None, "default savepoint directory",
           deprecated_keys=("state.savepoints.dir",)),
    Option(_CP + "num-retained", _parse_int, 1, "completed checkpoints kept",
           deprecated_keys=("state.checkpoints.num-retained",), check=lambda v: v >= 1,
           check_text="must be at least 1"),
    Option(_CP + "data-inline-threshold", parse_memory_bytes, 20 * 1024,
           "state smaller than this goes into _metadata instead of a file",
           deprecated_keys=("state.storage.fs.memory-threshold",),
           check=lambda v: 0 <= v <= 1024 * 1024, check_text="must be between 0 and 1 mb"),
    Option(_CP + "write-buffer-size", parse_memory_bytes, 4096, "write buffer of state files",
           deprecated_keys=("state.storage.fs.write-buffer-size",), check=lambda v: v > 0,
           check_text="must be positive"),
    Option(_CP + "unaligned.enabled", _parse_bool, False,
           "unaligned checkpoints: barriers overtake data in flight, which is stored",
           deprecated_keys=("execution.checkpointing.unaligned",)),
    Option(_CP + "aligned-checkpoint-timeout", parse_duration_ms, 0,
           "with unaligned: start aligned, go unaligned after this long; 0: always unaligned",
           deprecated_keys=("execution.checkpointing.alignment-timeout",),
           check=lambda v: v >= 0, check_text="must not be negative"),
    Option(_CP + "unaligned.forced", _parse_bool, False,
           "unaligned even where Flink would fall back to aligned (no effect here: every "
           "edge can be recorded)"),
    Option(_CP + "unaligned.max-subtasks-per-channel-state-file", _parse_int, 5,
           "subtasks whose channel state may share one file (each subtask writes its own)",
           check=lambda v: v >= 1, check_text="must be at least 1"),
    Option(_CP + "incremental", _parse_bool, False, "incremental checkpoints (rocksdb)",
           deprecated_keys=("state.backend.incremental",)),
    Option("execution.state-recovery.path", _parse_str, None,
           "the savepoint or retained checkpoint a new job starts from (-s)"),
    Option("execution.state-recovery.ignore-unclaimed-state", _parse_bool, False,
           "skip state of operators the job does not have (-n)"),
    Option("execution.state-recovery.claim-mode", _choice("NO_CLAIM", "CLAIM"), "NO_CLAIM",
           "NO_CLAIM: never touch the snapshot restored from; CLAIM: own it and delete it "
           "once subsumed"),
    Option("execution.state-recovery.from-local", _parse_bool, False,
           "restore from the task's local copy when possible",
           deprecated_keys=("state.backend.local-recovery",)),
    Option("state.backend.type", state_backends.parse_kind_name, state_backends.HASHMAP.name,
           "keyed state backend (a kind registered in state/backends/registry.py)"),
    Option("taskmanager.state.local.root-dirs", _parse_str, None,
           "where RocksDB keeps its working files; unset: the system temporary directory"),
    # each backend's own options (state.backend.<kind>.*) come with its kind, below
    Option(_RS + "type",
           _choice("disable", "none", "off", "fixed-delay", "fixeddelay", "exponential-delay",
                   "exponentialdelay", "failure-rate", "failurerate"),
           None, "restart strategy; default exponential-delay with checkpointing, else none"),
    Option(_RS + "max-identical-failures", _parse_int, 3,
           "consecutive attempts failing the same way on the same record (a poison record) "
           "that end the job, whatever the strategy allows; 0: restart for ever",
           check=lambda v: v >= 0, check_text="must not be negative"),
    Option(_RS + "fixed-delay.attempts", _parse_int, 1, "restarts before giving up",
           check=lambda v: v >= 0, check_text="must not be negative"),
    Option(_RS + "fixed-delay.delay", parse_duration_ms, 1000, "delay between restarts"),
    Option(_RS + "exponential-delay.initial-backoff", parse_duration_ms, 1000, "first delay"),
    Option(_RS + "exponential-delay.max-backoff", parse_duration_ms, 60_000, "largest delay"),
    Option(_RS + "exponential-delay.backoff-multiplier", _parse_float, 1.5, "growth factor",
           check=lambda v: v >= 1, check_text="must be at least 1"),
    Option(_RS + "exponential-delay.reset-backoff-threshold", parse_duration_ms, 3_600_000,
           "quiet time after which the delay starts over"),
    Option(_RS + "exponential-delay.jitter-factor", _parse_float, 0.1, "random +- share",
           check=lambda v: 0 <= v <= 1, check_text="must be between 0 and 1"),
    Option(_RS + "exponential-delay.attempts-before-reset-backoff", _parse_int, 2**31 - 1,
           "restarts before giving up", check=lambda v: v >= 1, check_text="must be >= 1"),
    Option(_RS + "failure-rate.max-failures-per-interval", _parse_int, 1,
           "failures tolerated within the interval", check=lambda v: v >= 1,
           check_text="must be at least 1"),
    Option(_RS + "failure-rate.failure-rate-interval", parse_duration_ms, 60_000, "interval"),
    Option(_RS + "failure-rate.delay", parse_duration_ms, 1000, "delay between restarts"),
    Option("parallelism.default", _parse_int, 1, "default parallelism",
           check=lambda v: v >= 1, check_text="must be at least 1"),
    Option("pipeline.max-parallelism", _parse_int, 128, "number of key groups",
           check=lambda v: 1 <= v <= 32768, check_text="must be between 1 and 32768"),
    Option("s3.endpoint", _parse_str, None, "S3 endpoint URL (http://host:port for an "
           "S3-compatible server); unset: AWS"),
    Option("s3.access-key", _parse_str, None, "S3 access key; unset: the AWS credential chain"),
    Option("s3.secret-key", _parse_str, None, "S3 secret key; unset: the AWS credential chain"),
    Option("s3.path.style.access", _parse_bool, False,
           "address buckets as endpoint/bucket instead of bucket.endpoint"),
    Option("s3.region", _parse_str, None, "S3 region; unset: AWS_REGION or the AWS profile",
           deprecated_keys=("s3.endpoint.region",)),
    Option("rest.address", _parse_str, "localhost", "where the REST API and web UI listen",
           deprecated_keys=("rest.bind-address",)),
    Option("rest.port", _parse_int, 8081, "port of the REST API and web UI (unset: the first "
           "free one of 8081-8181); 0: any free port; -1: no REST server",
           check=lambda v: -1 <= v <= 65535, check_text="must be between -1 and 65535"),
    Option("high-availability.type", _choice("none", "filesystem"), "none",
           "driver high availability: filesystem (leader election by a lease in "
           "high-availability.storageDir) or none; Flink's zookeeper and kubernetes are not "
           "offered", deprecated_keys=("high-availability",)),
    Option("high-availability.storageDir", _parse_str, None,
           "where the leases, the job and the checkpoint id counter are kept (file:// or a "
           "path every driver host shares, or s3://)",
           deprecated_keys=("high-availability.storage-path",)),
    Option("high-availability.cluster-id", _parse_str, None,
           "the job's identity across driver restarts; unset: the job's name"),
    Option("high-availability.filesystem.lease-duration", parse_duration_ms, 10_000,
           "how long a leader's lease lasts without a renewal; a standby takes over after it",
           check=lambda v: 500 <= v <= 600_000,
           check_text="must be between 500 ms and 10 min"),
    Option("scheduler-mode", _choice("default", "reactive"), "default",
           "reactive: the job's parallelism follows the task slots Spark gives it (scaling "
           "down when an executor is lost, up when executors are added), up to the max "
           "parallelism; needs checkpointing"),
    Option("jobmanager.adaptive-scheduler.resource-stabilization-timeout", parse_duration_ms,
           10_000, "reactive mode: how long more slots must be offered before the job scales "
           "up to them (executors register one by one; one rescale takes them all)",
           check=lambda v: v >= 0, check_text="must not be negative"),
    Option(_AS + "enabled", _parse_bool, False,
           "the autoscaler: rescales each vertex to keep its busy time in the target band and "
           "the sources' backlog draining; needs checkpointing"),
    Option(_AS + "target.utilization", _parse_float, _AUTOSCALER.target_utilization,
           "the busy fraction each vertex is scaled to"),
    Option(_AS + "target.utilization.boundary", _parse_float, _AUTOSCALER.utilization_boundary,
           "how far from the target utilization a vertex may be before it is rescaled"),
    Option(_AS + "metrics.window", parse_duration_ms, _ms(_AUTOSCALER.metrics_window_s),
           "the metrics a decision looks at: the last this much of them"),
    Option(_AS + "stabilization.interval", parse_duration_ms, _ms(_AUTOSCALER.stabilization_s),
           "no decision this long after the job (re)started at a parallelism"),
    Option(_AS + "scale-down.max-factor", _parse_float, _AUTOSCALER.scale_down_max_factor,
           "the largest share of a vertex's parallelism one scale-down removes"),
    Option(_AS + "scale-up.grace-period", parse_duration_ms, _ms(_AUTOSCALER.scale_up_grace_s),
           "no scale-down of a vertex this long after it scaled up"),
    Option(_AS + "catch-up.duration", parse_duration_ms, _ms(_AUTOSCALER.catch_up_s),
           "the time a source's backlog should take to drain, after a rescale too"),
    Option(_AS + "restart.time", parse_duration_ms, _ms(_AUTOSCALER.restart_time_s),
           "what a rescale costs before one was measured (the rescale history's downtimes "
           "replace it)"),
    Option(_AS + "vertex.max-parallelism", _parse_int, _AUTOSCALER.vertex_max_parallelism,
           "the highest parallelism the autoscaler gives a vertex; unset: the max parallelism"),
    Option("job-registry.dir", _parse_str, None,
           "where each job is recorded while it runs and how it ended, for barrierflow list "
           "and the job commands by id; unset: $BARRIERFLOW_HOME/jobs, else ~/.barrierflow/jobs"),
    Option("execution.buffer-timeout", parse_duration_ms, 100,
           "longest wait of a partly filled buffer",
           deprecated_keys=("execution.buffer-timeout.interval",), check=lambda v: v >= 1,
           check_text="must be at least 1 ms"),
    Option("taskmanager.network.memory.buffer-debloat.enabled", _parse_bool, False,
           "buffer debloating: the data in flight to each task follows its measured "
           "throughput, so that it holds about the target time of work and an aligned "
           "barrier does not wait behind seconds of buffered records"),
    Option("taskmanager.network.memory.buffer-debloat.target", parse_duration_ms, 1000,
           "buffer debloating: the time of work the data in flight to a task should hold",
           check=lambda v: v > 0, check_text="must be positive"),
    Option("taskmanager.network.memory.buffer-debloat.period", parse_duration_ms, 200,
           "buffer debloating: how often a task measures its throughput and resizes buffers",
           check=lambda v: v > 0, check_text="must be positive"),
    Option("taskmanager.network.memory.buffer-debloat.samples", _parse_int, 20,
           "buffer debloating: the periods the buffer size's moving average spans",
           check=lambda v: v >= 1, check_text="must be at least 1"),
    Option("taskmanager.network.memory.buffer-debloat.threshold-percentages", _parse_int, 25,
           "buffer debloating: a new buffer size is announced only if it differs from the "
           "last by more than this share", check=lambda v: 0 <= v <= 100,
           check_text="must be between 0 and 100"),
    Option("pipeline.auto-watermark-interval", parse_duration_ms, 200,
           "how often timestamp assigners emit watermarks; 0: only at the end of input",
           check=lambda v: v >= 0, check_text="must not be negative"),
    Option("pipeline.global-job-parameters", _parse_parameters, {},
           "parameters every function reads with runtime_context.get_job_parameter(key)"),
    Option("execution.runtime-mode", _choice("STREAMING", "BATCH", "AUTOMATIC"), "STREAMING",
           "BATCH: bounded inputs, final results only, no checkpoints; AUTOMATIC: BATCH when "
           "every source is bounded"),
    # PyFlink's DataStream API: operator chaining, the changelog it cannot have, and the
    # job's Python dependencies (client/python_dependencies.py ships them to the executors)
    Option("pipeline.operator-chaining.enabled", _parse_bool, True,
           "chain operators joined by forward edges into one task; false: each runs alone",
           deprecated_keys=("pipeline.operator-chaining",)),
    Option("state.changelog.enabled", _parse_bool, False,
           "Flink's changelog state backend, which barrierflow does not have",
           check=lambda v: v is False,
           check_text="barrierflow has no changelog state backend; for small, frequent "
           "checkpoints use incremental RocksDB checkpoints (state.backend.type: rocksdb, "
           "execution.checkpointing.incremental: true)"),
    Option("python.files", _parse_str, None,
           "Python files, packages, directories or zips (comma separated) importable by the "
           "job's functions on every executor"),
    Option("python.requirements", _parse_str, None,
           "a requirements file, installed for the job's Python workers on every executor; "
           "FILE#DIR installs offline from the packages in DIR"),
    Option("python.archives", _parse_str, None,
           "archives (comma separated) unpacked in the executors' working directory, each "
           "ARCHIVE#DIR into DIR (default: the archive's file name)"),
    Option("python.executable", _parse_str, None,
           "the Python interpreter of the job's workers, e.g. venv/bin/python inside an "
           "archive of python.archives"),
    *(o for kind in state_backends.registered() for o in kind.options),
)  # fmt: skip

_BY_KEY = {o.key: o for o in OPTIONS}
_BY_DEPRECATED = {d: o for o in OPTIONS for d in o.deprecated_keys}


def lookup(key: str) -> tuple[Option, bool]:
    """The option of ``key`` and whether ``key`` is a deprecated alias. A state backend
    registered after this module was imported brings its options too."""
    if key in _BY_KEY:
        return _BY_KEY[key], False
    if key in _BY_DEPRECATED:
        return _BY_DEPRECATED[key], True
    if (option := state_backends.option(key)) is not None:
        return option, False
    backend_keys = [o.key for kind in state_backends.registered() for o in kind.options]
    close = difflib.get_close_matches(key, [*_BY_KEY, *_BY_DEPRECATED, *backend_keys], n=3)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    raise ConfigurationError(f"unknown configuration key {key!r}{hint}")
