"""The pipeline: what a program declared for one job, as plain values (Flink's ``Pipeline``
with its configuration). The environment builds it at ``execute()``; submission plans and runs
it. Also the rules of the values it holds, which the environment's setters and the submission
context both check. Performs no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from barrierflow.errors import ConfigurationError
from barrierflow.graph.stream_graph import StreamGraph, build_stream_graph
from barrierflow.graph.transformation import Transformation, TransformationKind
from barrierflow.protocol.key_group_range import UPPER_BOUND_MAX_PARALLELISM

if TYPE_CHECKING:
    from barrierflow.cluster.restart_strategy import RestartStrategy


class Options(Protocol):
    """What a pipeline's options are read from: ``api.configuration.Configuration``, whose
    ``get`` returns an option's value or its default."""

    def get(self, key: str) -> Any: ...

    def contains(self, key: str) -> bool: ...


@dataclass(frozen=True)
class Checkpointing:
    """The checkpoint settings a program declared (its ``CheckpointConfig``'s values)."""

    interval_ms: int  # not above 0: checkpointing is off
    exactly_once: bool  # the checkpointing mode
    timeout_ms: int
    min_pause_ms: int
    max_concurrent: int
    tolerable_failures: int
    num_retained: int
    storage: str | None  # path or URI; None: the default directory, if checkpointing is on
    savepoint_dir: str | None
    data_inline_threshold_bytes: int
    write_buffer_size: int
    retain_on_cancel: bool  # externalized-checkpoint-retention RETAIN_ON_CANCELLATION
    checkpoints_after_tasks_finish: bool
    unaligned: bool
    aligned_checkpoint_timeout_ms: int

    @property
    def enabled(self) -> bool:
        return self.interval_ms > 0

    def check_unaligned(self) -> None:
        """Where Flink restricts unaligned checkpoints, say so before the job starts."""
        if not self.unaligned:
            return
        if not self.exactly_once:
            raise ConfigurationError(
                "unaligned checkpoints (execution.checkpointing.unaligned.enabled) need "
                "execution.checkpointing.mode EXACTLY_ONCE, got AT_LEAST_ONCE: at-least-once "
                "barriers never block, so there is nothing to overtake"
            )
        if self.max_concurrent != 1:
            raise ConfigurationError(
                "unaligned checkpoints (execution.checkpointing.unaligned.enabled) need "
                "execution.checkpointing.max-concurrent-checkpoints 1, got "
                f"{self.max_concurrent}: the data in flight of one checkpoint would hold that "
                "of the next"
            )


@dataclass(frozen=True)
class BackendDeclaration:
    """The state backend object a program set, as the registry names it: its kind, the kind's
    options the object sets (they win over the configuration's), and whether it asks for
    incremental checkpoints (None: ``execution.checkpointing.incremental`` decides)."""

    kind: str
    options: tuple[tuple[str, Any], ...] = ()
    incremental: bool | None = None
    local_dirs: tuple[str, ...] = ()  # the object's db storage paths; (): the configuration's


@dataclass(frozen=True)
class Pipeline:
    """One job as the program declared it. Its transformations are objects the program made
    (planning reads them, never changes them); ``configuration`` is the environment's."""

    job_name: str
    # The job's transformations in the order declared: the program's, less the sinks that an
    # earlier job of the same environment ran. Positions in it name operators without a uid.
    transformations: tuple[Transformation, ...]
    configuration: Options
    parallelism: int
    max_parallelism: int
    buffer_timeout_ms: int
    buffer_size: int
    checkpointing: Checkpointing
    state_backend: BackendDeclaration
    restart_strategy: RestartStrategy | None  # made for this job; None: restart-strategy.*
    restore_path: str | None = None  # -s: a savepoint or retained checkpoint
    allow_non_restored_state: bool = False
    claim_restored: bool = False  # execution.state-recovery.claim-mode CLAIM
    resume_job_id: str | None = None  # run as this job again: `run --resume`
    # high availability: the job's id across its drivers, and whether an earlier driver ran it
    # (then its checkpoints are taken over, or it starts afresh if it has none)
    job_id: str | None = None
    take_over: bool = False
    leader_epoch: int = 0  # the epoch this driver leads the job by (0: no high availability)
    spark: Any = None  # the SparkSession given to set_spark_session, if one was

    def reach(self) -> list[Transformation]:
        """The transformations the job's sinks read from, directly or not."""
        reached: set[int] = set()
        pending = [t for t in self.transformations if t.kind is TransformationKind.SINK]
        while pending:
            t = pending.pop()
            if t.id not in reached:
                reached.add(t.id)
                pending.extend(t.inputs)
        return [t for t in self.transformations if t.id in reached]

    def is_batch(self) -> bool:
        """Whether the job runs in BATCH mode; BATCH with an unbounded source is an error."""
        mode = self.configuration.get("execution.runtime-mode")
        if mode == "STREAMING":
            return False
        sources = [t for t in self.reach() if t.kind is TransformationKind.SOURCE]
        unbounded = [t for t in sources if not t.function.is_bounded()]
        if mode == "AUTOMATIC":
            return not unbounded
        if unbounded:
            raise ConfigurationError(
                f"runtime mode BATCH needs bounded sources; {unbounded[0].name!r} "
                f"({unbounded[0].function!r:.100}) is not bounded: run it in STREAMING mode"
            )
        return True

    def stream_graph(
        self, parallelism: int | None = None, parallelism_of: Mapping[str, int] | None = None
    ) -> StreamGraph:
        """The job's graph; ``parallelism`` (the default one) and ``parallelism_of`` (per
        operator uid) over the program's: a running job rescaled."""
        return build_stream_graph(
            self.job_name,
            list(self.transformations),
            parallelism or self.parallelism,
            self.max_parallelism,
            self.is_batch(),
            parallelism_of,
        )


def check_parallelism(parallelism: Any) -> int:
    if not isinstance(parallelism, int) or parallelism < 1:
        raise ConfigurationError(f"parallelism must be a positive integer, got {parallelism!r}")
    return parallelism


def check_max_parallelism(max_parallelism: Any) -> int:
    if not isinstance(max_parallelism, int) or not (
        1 <= max_parallelism <= UPPER_BOUND_MAX_PARALLELISM
    ):
        raise ConfigurationError(
            f"max parallelism must be between 1 and {UPPER_BOUND_MAX_PARALLELISM}, "
            f"got {max_parallelism!r}"
        )
    return max_parallelism


def check_job_id(job_id: Any) -> str | None:
    """A job id names the job's directory under the checkpoint storage: letters and digits."""
    if job_id is not None and not (isinstance(job_id, str) and job_id.isalnum()):
        raise ConfigurationError(f"a job id is letters and digits, got {job_id!r}")
    return job_id
