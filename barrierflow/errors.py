"""The errors that cross layers: raised deep inside, caught and reported at the surface; the
public path of those a program catches (``ConfigurationError``, and how a job ends:
``JobExecutionError``, ``JobCanceledError``, ``SavepointError``).

Each message says what happened, the likely cause and what to do. Performs no I/O.
"""

from __future__ import annotations

__all__ = [
    "ConfigurationError",
    "CorruptCheckpointError",
    "JobCanceledError",
    "JobExecutionError",
    "LeadershipLostError",
    "SavepointError",
    "StorageConfigError",
]


class ConfigurationError(ValueError):
    """An invalid setting, reported before any Spark job starts."""


class StorageConfigError(ConfigurationError):
    """A checkpoint storage URI that cannot be used."""


class CorruptCheckpointError(Exception):
    """A checkpoint file that is truncated, corrupted, or of an unknown format."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"checkpoint file {path} is unusable: {reason}")
        self.path = path
        self.reason = reason


class LeadershipLostError(Exception):
    """This process led a job under high availability and may no longer act for it: a newer
    epoch took over, or its lease ran out while it was paused or cut off from the HA storage.
    Whatever it was about to do (complete a checkpoint, tell sinks to commit) is not done."""

    def __init__(self, epoch: int, lost_to: int | None, reason: str) -> None:
        to = f" to epoch {lost_to}" if lost_to is not None else ""
        super().__init__(f"lost leadership{to} (this JobMaster led epoch {epoch}): {reason}")
        self.epoch = epoch
        self.lost_to = lost_to


class JobExecutionError(Exception):
    """The job failed for good; the message is the last attempt's error."""

    def __init__(self, message: str, remote_traceback: str = "") -> None:
        text = (
            message if not remote_traceback else f"{message}\n\nTask traceback:\n{remote_traceback}"
        )
        super().__init__(text)
        self.remote_traceback = remote_traceback


class JobCanceledError(Exception):
    """The job was canceled before it ended."""


class SavepointError(Exception):
    """A savepoint that could not be taken; the message says why."""
