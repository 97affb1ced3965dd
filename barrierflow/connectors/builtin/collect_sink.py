"""The sink behind ``print()`` and ``execute_and_collect``: records go to the driver, where
the user reads them, over the task's control channel to the JobMaster.

With checkpointing it is a two-phase-commit sink like the others: the records of a checkpoint
interval become committables at the barrier (pickled batches), sent to the driver when the
checkpoint completes, and sent again by a recovery that restores them. Each batch carries a
delivery id (subtask, checkpoint, part), and the driver takes each id once, so what is printed
or collected is exactly once across failures. Without checkpointing, records are sent as they
are written (a restart sends them again, as in Flink).

Records are pickled (docs/adr/0002-record-and-state-serialization.md) in batches of at most
``BATCH`` records, so that no message grows without bound.
"""

from __future__ import annotations

import itertools
import pickle
import uuid
from typing import Any

import msgspec

from barrierflow.connectors.base.struct_codec import StructCodec
from barrierflow.connectors.interfaces.sink import (
    Committable,
    Committer,
    CommitterContext,
    Sink,
    SinkWriter,
    SinkWriterContext,
    ToDriver,
)

BATCH = 10_000


class CollectCommittable(msgspec.Struct, frozen=True):
    """A batch of records to send: ``delivery``, the id the driver takes once; ``records``,
    pickled."""

    delivery: str
    records: bytes


COMMITTABLES = StructCodec(CollectCommittable)


class CollectSink(Sink):
    """``collector``: the driver-side collector's id (``cluster/collected_records.py``)."""

    def __init__(self, collector: str) -> None:
        self.collector = collector

    def create_writer(self, context: SinkWriterContext) -> CollectWriter:
        if context.to_driver is None:
            raise RuntimeError("this sink sends records to the driver, which this task cannot")
        return CollectWriter(self.collector, context)

    def create_committer(self, context: CommitterContext) -> CollectCommitter:
        if context.to_driver is None:
            raise RuntimeError("this sink sends records to the driver, which this task cannot")
        return CollectCommitter(self.collector, context.to_driver)

    def committable_codec(self) -> StructCodec[CollectCommittable]:
        return COMMITTABLES

    def __repr__(self) -> str:
        return f"CollectSink({self.collector})"


class CollectWriter(SinkWriter):
    def __init__(self, collector: str, context: SinkWriterContext) -> None:
        self._collector = collector
        self._context = context
        send = context.to_driver
        assert send is not None  # CollectSink.create_writer refuses a task that has none
        self._send = send
        self._buffered: list[Any] = []
        self._immediate = not context.checkpointing
        self._run = uuid.uuid4().hex[:12]  # names immediate deliveries of this writer
        self._sent = itertools.count()

    def write(self, records: list[Any]) -> None:
        if self._immediate:
            for part in range(0, len(records), BATCH):
                delivery = f"{self._run}/{next(self._sent)}"
                self._send(self._collector, delivery, _pickled(records[part : part + BATCH]))
        else:
            self._buffered.extend(records)

    def prepare_commit(self, checkpoint_id: int) -> list[CollectCommittable]:
        records, self._buffered = self._buffered, []
        subtask = self._context.subtask
        name = f"{subtask}/{checkpoint_id}" if checkpoint_id else f"{self._run}/end"
        return [
            CollectCommittable(f"{name}/{part}", _pickled(records[part : part + BATCH]))
            for part in range(0, len(records), BATCH)
        ]

    def close(self) -> None:
        self._buffered = []


class CollectCommitter(Committer):
    """Sends each batch; the driver takes each delivery id once, so a batch sent again (after
    a failover) is not shown twice."""

    def __init__(self, collector: str, to_driver: ToDriver) -> None:
        self._collector = collector
        self._send = to_driver

    def commit(self, committables: list[Committable]) -> None:
        for c in committables:
            self._send(self._collector, c.data.delivery, c.data.records)


def _pickled(records: list[Any]) -> bytes:
    return pickle.dumps(records, protocol=5)
