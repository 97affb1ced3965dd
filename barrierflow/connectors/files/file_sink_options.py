"""What a PyFlink program says about FileSink's part files: their names (OutputFileConfig) and
when a part file is closed for a new one (RollingPolicy).

Whatever the policy, a part file also closes at every checkpoint barrier: it becomes visible
when that checkpoint completes, which is what exactly-once asks (Flink's rule for bulk formats,
and its ``on_checkpoint_rolling_policy``). ``default_rolling_policy`` adds Flink's size and
time limits within a checkpoint: a part file past ``part_size`` bytes, older than
``rollover_interval`` or written to last longer than ``inactivity_interval`` ago is closed at
the next write, and the next records go to a new one; all become visible with the checkpoint.
Performs no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from barrierflow.eventtime.durations import millis_of


@dataclass(frozen=True)
class OutputFileConfig:
    """Committed part files are named ``<prefix>-<subtask>-<checkpoint>-<id><suffix>``."""

    part_prefix: str = "part"
    part_suffix: str = ""

    def __post_init__(self) -> None:
        for what, value in (("prefix", self.part_prefix), ("suffix", self.part_suffix)):
            if not isinstance(value, str) or "/" in value or (what == "prefix" and not value):
                raise ValueError(
                    f"OutputFileConfig: the part {what} must be a string without '/'"
                    f"{'' if what == 'suffix' else ', not empty'}, got {value!r}"
                )
        if self.part_prefix.startswith((".", "_")):
            raise ValueError(
                f"OutputFileConfig: a part prefix starting with '.' or '_' ({self.part_prefix!r}) "
                "would hide the committed files from readers"
            )

    def get_part_prefix(self) -> str:
        return self.part_prefix

    def get_part_suffix(self) -> str:
        return self.part_suffix

    @staticmethod
    def builder() -> OutputFileConfigBuilder:
        return OutputFileConfigBuilder()


class OutputFileConfigBuilder:
    def __init__(self) -> None:
        self._prefix, self._suffix = "part", ""

    def with_part_prefix(self, prefix: str) -> OutputFileConfigBuilder:
        self._prefix = prefix
        return self

    def with_part_suffix(self, suffix: str) -> OutputFileConfigBuilder:
        self._suffix = suffix
        return self

    def build(self) -> OutputFileConfig:
        return OutputFileConfig(self._prefix, self._suffix)


# PyFlink's path of the builder: a class nested in OutputFileConfig
OutputFileConfig.OutputFileConfigBuilder = OutputFileConfigBuilder  # type: ignore[attr-defined]


@dataclass(frozen=True)
class RollingPolicy:
    """``None`` limits: the part file rolls at checkpoints only."""

    part_size: int | None = None  # bytes
    rollover_interval_ms: int | None = None
    inactivity_interval_ms: int | None = None

    @staticmethod
    def default_rolling_policy(
        part_size: int = 128 * 1024 * 1024,
        rollover_interval: Any = 60 * 1000,
        inactivity_interval: Any = 60 * 1000,
    ) -> RollingPolicy:
        """Flink's defaults: 128 MiB, 60 s, 60 s (intervals in ms or as a Duration)."""
        if isinstance(part_size, bool) or not isinstance(part_size, int) or part_size <= 0:
            raise ValueError(
                f"default_rolling_policy(): part_size must be bytes > 0, got {part_size!r}"
            )
        intervals = [
            millis_of(rollover_interval, "default_rolling_policy(rollover_interval)"),
            millis_of(inactivity_interval, "default_rolling_policy(inactivity_interval)"),
        ]
        if min(intervals) <= 0:
            raise ValueError(
                f"default_rolling_policy(): intervals must be positive ms, got {intervals}"
            )
        return RollingPolicy(part_size, *intervals)

    @staticmethod
    def on_checkpoint_rolling_policy() -> RollingPolicy:
        return RollingPolicy()

    def should_roll(self, size: int, opened_s: float, last_write_s: float, now_s: float) -> bool:
        """Whether the open part file, of ``size`` bytes, closes before the next write."""
        return (
            (self.part_size is not None and size >= self.part_size)
            or (
                self.rollover_interval_ms is not None
                and (now_s - opened_s) * 1000 >= self.rollover_interval_ms
            )
            or (
                self.inactivity_interval_ms is not None
                and (now_s - last_write_s) * 1000 >= self.inactivity_interval_ms
            )
        )
