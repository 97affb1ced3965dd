"""The sink interface's public path (``interfaces/sink.py`` defines it). Performs no I/O."""

from barrierflow.connectors.interfaces.sink import (
    CommitRetryPolicy,
    Committable,
    Committer,
    CommitterContext,
    GlobalCommitter,
    JobSettings,
    Recovery,
    Sink,
    SinkWriter,
    SinkWriterContext,
)

__all__ = [
    "CommitRetryPolicy",
    "Committable",
    "Committer",
    "CommitterContext",
    "GlobalCommitter",
    "JobSettings",
    "Recovery",
    "Sink",
    "SinkWriter",
    "SinkWriterContext",
]
