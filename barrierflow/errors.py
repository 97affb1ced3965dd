"""The errors that cross layers: raised deep inside, caught and reported at the surface.

Each message says what happened, the likely cause and what to do. Performs no I/O.
"""

from __future__ import annotations


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
