"""Checkpoint configuration with PyFlink's setter names and Flink's defaults."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class CheckpointingMode(enum.Enum):
    EXACTLY_ONCE = "EXACTLY_ONCE"
    AT_LEAST_ONCE = "AT_LEAST_ONCE"


class ConfigurationError(ValueError):
    """An invalid setting, reported before any Spark job starts."""


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
    extra: dict = field(default_factory=dict)

    # --- PyFlink names ----------------------------------------------------------------------

    def is_checkpointing_enabled(self) -> bool:
        return self.interval_ms > 0

    def set_checkpoint_storage(self, uri: str) -> CheckpointConfig:
        _require(
            isinstance(uri, str) and bool(uri.strip()),
            f"checkpoint storage must be a non-empty path or URI, got {uri!r}",
        )
        self.storage = uri
        return self

    def set_checkpoint_storage_dir(self, uri: str) -> CheckpointConfig:
        return self.set_checkpoint_storage(uri)

    def get_checkpoint_storage(self) -> str | None:
        return self.storage

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
