"""Checkpoint configuration with PyFlink's setter names and Flink's defaults."""

from __future__ import annotations

import datetime
import enum
from dataclasses import dataclass

from barrierflow.api.checkpoint_storage import (
    CheckpointStorage,
    FileSystemCheckpointStorage,
    JobManagerCheckpointStorage,
)
from barrierflow.errors import ConfigurationError


class CheckpointingMode(enum.Enum):
    EXACTLY_ONCE = "EXACTLY_ONCE"
    AT_LEAST_ONCE = "AT_LEAST_ONCE"


class ExternalizedCheckpointRetention(enum.Enum):
    """What happens to the retained checkpoints when the job is canceled. On failure they are
    always kept; when a bounded job finishes, its final checkpoint is kept (docs/adr/0003)."""

    NO_EXTERNALIZED_CHECKPOINTS = "NO_EXTERNALIZED_CHECKPOINTS"  # deleted on cancel
    DELETE_ON_CANCELLATION = "DELETE_ON_CANCELLATION"
    RETAIN_ON_CANCELLATION = "RETAIN_ON_CANCELLATION"


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ConfigurationError(message)


@dataclass
class CheckpointConfig:
    interval_ms: int = -1  # disabled
    mode: CheckpointingMode = CheckpointingMode.EXACTLY_ONCE
    timeout_ms: int = 10 * 60 * 1000
    min_pause_ms: int = 0
    max_concurrent: int = 1
    tolerable_failures: int = 0
    num_retained: int = 1
    storage: str | None = None
    data_inline_threshold_bytes: int = 20 * 1024
    write_buffer_size: int = 4096
    externalized_retention: ExternalizedCheckpointRetention = (
        ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS
    )
    checkpoints_after_tasks_finish: bool = True
    savepoint_dir: str | None = None
    unaligned: bool = False
    aligned_checkpoint_timeout_ms: int = 0
    force_unaligned: bool = False
    max_subtasks_per_channel_state_file: int = 5

    # --- PyFlink names ----------------------------------------------------------------------

    def is_checkpointing_enabled(self) -> bool:
        return self.interval_ms > 0

    def set_checkpoint_storage(self, storage: str | CheckpointStorage) -> CheckpointConfig:
        """A path or URI, or PyFlink's ``FileSystemCheckpointStorage(path, ...)`` (its
        thresholds too) or ``JobManagerCheckpointStorage()``."""
        if isinstance(storage, FileSystemCheckpointStorage):
            if storage.get_min_file_size_threshold() >= 0:
                self.set_data_inline_threshold(storage.get_min_file_size_threshold())
            if storage.write_buffer_size >= 0:
                self.write_buffer_size = storage.write_buffer_size
        if isinstance(storage, CheckpointStorage):
            self.storage = storage.get_checkpoint_path()
            return self
        _require(
            isinstance(storage, str) and bool(storage.strip()),
            "checkpoint storage must be a non-empty path or URI, or a FileSystemCheckpointStorage"
            f", got {storage!r}",
        )
        self.storage = storage
        return self

    def set_checkpoint_storage_dir(self, checkpoint_path: str) -> CheckpointConfig:
        return self.set_checkpoint_storage(checkpoint_path)

    def get_checkpoint_storage(self) -> CheckpointStorage:
        """As PyFlink: the storage as an object (a path set is a FileSystemCheckpointStorage;
        none set is the JobManagerCheckpointStorage, which barrierflow keeps on local disk)."""
        if self.storage is None:
            return JobManagerCheckpointStorage()
        return FileSystemCheckpointStorage(
            self.storage, self.data_inline_threshold_bytes, self.write_buffer_size
        )

    def set_checkpoint_interval(self, interval_ms: int) -> CheckpointConfig:
        _require(
            isinstance(interval_ms, int) and interval_ms >= 10,
            f"checkpoint interval must be an integer of at least 10 ms, got {interval_ms!r}",
        )
        self.interval_ms = interval_ms
        return self

    def get_checkpoint_interval(self) -> int:
        return self.interval_ms

    def set_checkpointing_mode(self, mode: CheckpointingMode) -> CheckpointConfig:
        _require(
            isinstance(mode, CheckpointingMode),
            f"checkpointing mode must be a CheckpointingMode, got {mode!r}",
        )
        self.mode = mode
        return self

    def get_checkpointing_mode(self) -> CheckpointingMode:
        return self.mode

    def set_checkpoint_timeout(self, timeout_ms: int) -> CheckpointConfig:
        _require(
            isinstance(timeout_ms, int) and timeout_ms > 0,
            f"checkpoint timeout must be a positive number of ms, got {timeout_ms!r}",
        )
        self.timeout_ms = timeout_ms
        return self

    def get_checkpoint_timeout(self) -> int:
        return self.timeout_ms

    def set_min_pause_between_checkpoints(self, min_pause_ms: int) -> CheckpointConfig:
        _require(
            isinstance(min_pause_ms, int) and min_pause_ms >= 0,
            f"min pause must be a non-negative number of ms, got {min_pause_ms!r}",
        )
        self.min_pause_ms = min_pause_ms
        return self

    def get_min_pause_between_checkpoints(self) -> int:
        return self.min_pause_ms

    def set_max_concurrent_checkpoints(self, n: int) -> CheckpointConfig:
        _require(
            isinstance(n, int) and n >= 1, f"max concurrent checkpoints must be >= 1, got {n!r}"
        )
        self.max_concurrent = n
        return self

    def get_max_concurrent_checkpoints(self) -> int:
        return self.max_concurrent

    def set_tolerable_checkpoint_failure_number(self, n: int) -> CheckpointConfig:
        _require(
            isinstance(n, int) and n >= 0, f"tolerable checkpoint failures must be >= 0, got {n!r}"
        )
        self.tolerable_failures = n
        return self

    def get_tolerable_checkpoint_failure_number(self) -> int:
        return self.tolerable_failures

    def set_num_retained_checkpoints(self, n: int) -> CheckpointConfig:
        _require(isinstance(n, int) and n >= 1, f"num-retained must be >= 1, got {n!r}")
        self.num_retained = n
        return self

    def set_data_inline_threshold(self, size_bytes: int) -> CheckpointConfig:
        _require(
            isinstance(size_bytes, int) and 0 <= size_bytes <= 1024 * 1024,
            f"data-inline-threshold must be between 0 and 1 MB, got {size_bytes!r}",
        )
        self.data_inline_threshold_bytes = size_bytes
        return self

    def set_externalized_checkpoint_retention(
        self, retention: ExternalizedCheckpointRetention
    ) -> CheckpointConfig:
        _require(
            isinstance(retention, ExternalizedCheckpointRetention),
            f"retention must be an ExternalizedCheckpointRetention, got {retention!r}",
        )
        self.externalized_retention = retention
        return self

    def get_externalized_checkpoint_retention(self) -> ExternalizedCheckpointRetention:
        return self.externalized_retention

    def is_externalized_checkpoints_enabled(self) -> bool:
        return (
            self.externalized_retention
            is not ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS
        )

    def set_checkpoints_after_tasks_finish(self, enabled: bool) -> CheckpointConfig:
        self.checkpoints_after_tasks_finish = bool(enabled)
        return self

    def set_savepoint_dir(self, uri: str) -> CheckpointConfig:
        self.savepoint_dir = uri
        return self

    # --- unaligned checkpoints (docs/adr/0006-unaligned-checkpoints.md) ---------------------

    def enable_unaligned_checkpoints(self, enabled: bool = True) -> CheckpointConfig:
        """Barriers overtake the data in flight, which is stored in the checkpoint: checkpoints
        stay fast under backpressure. Needs EXACTLY_ONCE and max-concurrent 1 (checked when
        the job starts); savepoints and the final checkpoint stay aligned."""
        self.unaligned = bool(enabled)
        return self

    def disable_unaligned_checkpoints(self) -> CheckpointConfig:
        return self.enable_unaligned_checkpoints(False)

    def is_unaligned_checkpoints_enabled(self) -> bool:
        return self.unaligned

    def set_aligned_checkpoint_timeout(self, timeout: int | datetime.timedelta) -> CheckpointConfig:
        """With unaligned checkpoints: each checkpoint starts aligned, and goes unaligned where
        its alignment lasts longer than this (counted from its trigger); 0: always unaligned."""
        if isinstance(timeout, datetime.timedelta):
            timeout = round(timeout.total_seconds() * 1000)
        _require(
            isinstance(timeout, int) and not isinstance(timeout, bool) and timeout >= 0,
            "aligned checkpoint timeout must be a non-negative number of ms or a timedelta, "
            f"got {timeout!r}",
        )
        self.aligned_checkpoint_timeout_ms = timeout
        return self

    def get_aligned_checkpoint_timeout(self) -> datetime.timedelta:
        return datetime.timedelta(milliseconds=self.aligned_checkpoint_timeout_ms)

    def set_force_unaligned_checkpoints(self, force: bool = True) -> CheckpointConfig:
        """Flink falls back to aligned checkpoints on edges it cannot record (pointwise
        rescaling); barrierflow records every edge, so this only documents intent."""
        self.force_unaligned = bool(force)
        return self

    def is_force_unaligned_checkpoints(self) -> bool:
        return self.force_unaligned

    def check_unaligned(self) -> None:
        """Where Flink restricts unaligned checkpoints, say so before the job starts."""
        if not self.unaligned:
            return
        _require(
            self.mode is CheckpointingMode.EXACTLY_ONCE,
            "unaligned checkpoints (execution.checkpointing.unaligned.enabled) need "
            "execution.checkpointing.mode EXACTLY_ONCE, got AT_LEAST_ONCE: at-least-once "
            "barriers never block, so there is nothing to overtake",
        )
        _require(
            self.max_concurrent == 1,
            "unaligned checkpoints (execution.checkpointing.unaligned.enabled) need "
            "execution.checkpointing.max-concurrent-checkpoints 1, got "
            f"{self.max_concurrent}: the data in flight of one checkpoint would hold that of "
            "the next",
        )
