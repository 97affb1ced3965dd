"""What a source's reader says waits to be read: its backlog, reported with the subtask's
metrics (Flink's ``pendingRecords``, in the source's own unit), for the autoscaler and the
metrics. Performs no I/O."""

from __future__ import annotations

import msgspec


class SourceBacklog(msgspec.Struct, frozen=True):
    """``pending``: what waits now; ``consumed``: what the reader took so far, cumulative, in
    the same unit (records for Kafka's lag, bytes for files), so that the backlog's growth
    compares with the reading rate whatever the unit."""

    label: str  # what it is, for people: "Kafka lag", "unread file bytes"
    pending: float
    consumed: float
