"""Checkpoint configuration with PyFlink's setter names and Flink's defaults; the
``execution.checkpointing.*`` options of a configuration applied to it (``_SETTERS``), and its
values as a job is planned with them (``client/pipeline.py``'s ``Checkpointing``)."""

from __future__ import annotations

import datetime
import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from barrierflow.api.checkpoint_storage import (
    CheckpointStorage,
    FileSystemCheckpointStorage,
    JobManagerCheckpointStorage,
)
from barrierflow.client.pipeline import Checkpointing
from barrierflow.errors import ConfigurationError

if TYPE_CHECKING:
    from barrierflow.api.configuration import Configuration


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
            threshold = storage.file_state_size_threshold  # None or -1: the configured one
            if threshold is not None and threshold >= 0:
                self.set_data_inline_threshold(threshold)
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

    def set_max_concurrent_checkpoints(self, max_concurrent_checkpoints: int) -> CheckpointConfig:
        _require(
            isinstance(max_concurrent_checkpoints, int) and max_concurrent_checkpoints >= 1,
            f"max concurrent checkpoints must be >= 1, got {max_concurrent_checkpoints!r}",
        )
        self.max_concurrent = max_concurrent_checkpoints
        return self

    def get_max_concurrent_checkpoints(self) -> int:
        return self.max_concurrent

    def set_tolerable_checkpoint_failure_number(
        self, tolerable_checkpoint_failure_number: int
    ) -> CheckpointConfig:
        _require(
            isinstance(tolerable_checkpoint_failure_number, int)
            and tolerable_checkpoint_failure_number >= 0,
            "tolerable checkpoint failures must be >= 0, got "
            f"{tolerable_checkpoint_failure_number!r}",
        )
        self.tolerable_failures = tolerable_checkpoint_failure_number
        return self

    def get_tolerable_checkpoint_failure_number(self) -> int:
        return self.tolerable_failures

    def set_num_retained_checkpoints(self, num_retained_checkpoints: int) -> CheckpointConfig:
        _require(
            isinstance(num_retained_checkpoints, int) and num_retained_checkpoints >= 1,
            f"num-retained must be >= 1, got {num_retained_checkpoints!r}",
        )
        self.num_retained = num_retained_checkpoints
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

    def is_fail_on_checkpointing_errors(self) -> bool:
        """Whether a failed checkpoint fails the job: no failure tolerated (PyFlink's name
        before 2.0 for a tolerable-failure number of 0)."""
        return self.get_tolerable_checkpoint_failure_number() == 0

    def set_fail_on_checkpointing_errors(
        self, fail_on_checkpointing_errors: bool
    ) -> CheckpointConfig:
        """True: no checkpoint failure tolerated; False: every one (Java's Integer.MAX_VALUE),
        as PyFlink maps it."""
        number = 0 if fail_on_checkpointing_errors else 2**31 - 1
        return self.set_tolerable_checkpoint_failure_number(number)

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
        its alignment lasts longer than this (counted from its trigger); 0: always unaligned.
        Milliseconds, a ``timedelta`` or PyFlink's ``Duration``."""
        if isinstance(timeout, datetime.timedelta):
            timeout = round(timeout.total_seconds() * 1000)
        elif callable(getattr(timeout, "to_milliseconds", None)):  # a Duration
            timeout = timeout.to_milliseconds()
        _require(
            isinstance(timeout, int) and not isinstance(timeout, bool) and timeout >= 0,
            "aligned checkpoint timeout must be a non-negative number of ms or a timedelta, "
            f"got {timeout!r}",
        )
        self.aligned_checkpoint_timeout_ms = timeout
        return self

    def get_aligned_checkpoint_timeout(self) -> datetime.timedelta:
        return datetime.timedelta(milliseconds=self.aligned_checkpoint_timeout_ms)

    def set_alignment_timeout(self, alignment_timeout: Any) -> CheckpointConfig:
        """PyFlink's name before 2.0 of ``set_aligned_checkpoint_timeout``."""
        return self.set_aligned_checkpoint_timeout(alignment_timeout)

    def get_alignment_timeout(self) -> datetime.timedelta:
        """PyFlink's name before 2.0 of ``get_aligned_checkpoint_timeout``."""
        return self.get_aligned_checkpoint_timeout()

    def set_force_unaligned_checkpoints(self, force: bool = True) -> CheckpointConfig:
        """Flink falls back to aligned checkpoints on edges it cannot record (pointwise
        rescaling); barrierflow records every edge, so this only documents intent."""
        self.force_unaligned = bool(force)
        return self

    def is_force_unaligned_checkpoints(self) -> bool:
        return self.force_unaligned

    # --- the configuration and the job ------------------------------------------------------

    def configure(self, configuration: Configuration) -> CheckpointConfig:
        """Applies the checkpointing options set in ``configuration`` (as Flink's
        ``CheckpointConfig.configure``): each calls its setter, in the table below."""
        for key in configuration:
            if key in _SETTERS:
                _SETTERS[key](self, configuration.get(key))
        return self

    def checkpointing(self) -> Checkpointing:
        """The values a job is planned with, as they are now."""
        return Checkpointing(
            interval_ms=self.interval_ms,
            exactly_once=self.mode is CheckpointingMode.EXACTLY_ONCE,
            timeout_ms=self.timeout_ms,
            min_pause_ms=self.min_pause_ms,
            max_concurrent=self.max_concurrent,
            tolerable_failures=self.tolerable_failures,
            num_retained=self.num_retained,
            storage=self.storage,
            savepoint_dir=self.savepoint_dir,
            data_inline_threshold_bytes=self.data_inline_threshold_bytes,
            write_buffer_size=self.write_buffer_size,
            retain_on_cancel=self.externalized_retention
            is ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION,
            checkpoints_after_tasks_finish=self.checkpoints_after_tasks_finish,
            unaligned=self.unaligned,
            aligned_checkpoint_timeout_ms=self.aligned_checkpoint_timeout_ms,
        )


_CP = "execution.checkpointing."

# Flink's checkpointing options and what each sets: the setter called with the option's value
# (parsed and checked by api/config_options.py), converted where the setter takes an enum;
# two settings without a PyFlink setter are fields.
_SETTERS: dict[str, Callable[[CheckpointConfig, Any], object]] = {
    _CP + "interval": CheckpointConfig.set_checkpoint_interval,
    _CP + "mode": lambda cc, v: cc.set_checkpointing_mode(CheckpointingMode(v)),
    _CP + "timeout": CheckpointConfig.set_checkpoint_timeout,
    _CP + "min-pause": CheckpointConfig.set_min_pause_between_checkpoints,
    _CP + "max-concurrent-checkpoints": CheckpointConfig.set_max_concurrent_checkpoints,
    _CP + "tolerable-failed-checkpoints": CheckpointConfig.set_tolerable_checkpoint_failure_number,
    _CP + "externalized-checkpoint-retention": lambda cc, v: (
        cc.set_externalized_checkpoint_retention(ExternalizedCheckpointRetention(v))
    ),
    _CP + "checkpoints-after-tasks-finish": CheckpointConfig.set_checkpoints_after_tasks_finish,
    _CP + "dir": CheckpointConfig.set_checkpoint_storage,
    _CP + "savepoint-dir": CheckpointConfig.set_savepoint_dir,
    _CP + "num-retained": CheckpointConfig.set_num_retained_checkpoints,
    _CP + "data-inline-threshold": CheckpointConfig.set_data_inline_threshold,
    _CP + "write-buffer-size": lambda cc, v: setattr(cc, "write_buffer_size", v),
    _CP + "unaligned.enabled": CheckpointConfig.enable_unaligned_checkpoints,
    _CP + "aligned-checkpoint-timeout": CheckpointConfig.set_aligned_checkpoint_timeout,
    _CP + "unaligned.forced": CheckpointConfig.set_force_unaligned_checkpoints,
    _CP + "unaligned.max-subtasks-per-channel-state-file": lambda cc, v: setattr(
        cc, "max_subtasks_per_channel_state_file", v
    ),
}
