"""Test sinks over an in-memory "external system" (a ledger): rows staged under a transaction
id at the barrier and moved to the visible table by an idempotent commit, through a committer
per subtask (``LedgerSink``) or one global committer (``GlobalLedgerSink``). Every call is
recorded, so tests can see what the framework did. Performs no I/O.

The ledger lives in a registry by name: the harnesses give each operator a copy of its sink, as
a slot gets an unpickled one, and every copy must reach the same ledger.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from barrierflow.connectors.interfaces.committables import Committable, Recovery
from barrierflow.connectors.interfaces.delivery_guarantee import DeliveryGuarantee
from barrierflow.datastream.connectors.base import (
    Committer,
    CommitterContext,
    GlobalCommitter,
    Sink,
    SinkWriter,
    SinkWriterContext,
)

_names = itertools.count()


@dataclass
class Ledger:
    staged: dict[str, list[Any]] = field(default_factory=dict)  # transaction id -> rows
    visible: list[Any] = field(default_factory=list)
    committed: set[str] = field(default_factory=set)
    commits: list[tuple[int, list[str]]] = field(default_factory=list)  # (checkpoint, ids)
    recoveries: list[Recovery] = field(default_factory=list)
    failures_left: int = 0  # commits that fail before one succeeds

    def commit(self, checkpoint_id: int, transactions: list[str]) -> None:
        if self.failures_left:
            self.failures_left -= 1
            raise ConnectionError("the ledger is unreachable")
        self.commits.append((checkpoint_id, transactions))
        for txn in transactions:
            if txn not in self.committed:  # idempotent: a repeated commit is a no-op
                self.committed.add(txn)
                self.visible += self.staged.pop(txn)


LEDGERS: dict[str, Ledger] = {}


def new_ledger() -> tuple[str, Ledger]:
    name = f"ledger-{next(_names)}"
    LEDGERS[name] = Ledger()
    return name, LEDGERS[name]


class _Writer(SinkWriter):
    def __init__(self, ledger: str, context: SinkWriterContext) -> None:
        self._ledger = LEDGERS[ledger]
        self._context = context
        self._rows: list[Any] = []

    def write(self, records: list[Any]) -> None:
        self._rows += records

    def prepare_commit(self, checkpoint_id: int) -> list[dict[str, Any]]:
        if not self._rows:
            return []
        c = self._context
        txn = f"{c.subtask}:{checkpoint_id}:{c.attempt}:{next(_names)}"
        self._ledger.staged[txn], self._rows = self._rows, []
        return [{"txn": txn}]


class _Committer(Committer):
    def __init__(self, ledger: str) -> None:
        self._ledger = LEDGERS[ledger]

    def commit(self, committables: list[Committable]) -> None:
        for cid in sorted({c.checkpoint_id for c in committables}):
            txns = [c.data["txn"] for c in committables if c.checkpoint_id == cid]
            self._ledger.commit(cid, txns)

    def abort_lingering(self, recovery: Recovery) -> None:
        self._ledger.recoveries.append(recovery)


class LedgerSink(Sink):
    def __init__(self, ledger: str, guarantee: DeliveryGuarantee = DeliveryGuarantee.EXACTLY_ONCE):
        self.ledger = ledger
        self.delivery_guarantee = guarantee

    def create_writer(self, context: SinkWriterContext) -> SinkWriter:
        return _Writer(self.ledger, context)

    def create_committer(self, context: CommitterContext) -> Committer:
        return _Committer(self.ledger)


class _GlobalCommitter(GlobalCommitter):
    def __init__(self, ledger: str) -> None:
        self._ledger = LEDGERS[ledger]

    def commit(self, checkpoint_id: int, committables: list[Committable]) -> None:
        self._ledger.commit(checkpoint_id, sorted(c.data["txn"] for c in committables))


class GlobalLedgerSink(Sink):
    """One commit per checkpoint, on the JobMaster (a table format's way)."""

    def __init__(self, ledger: str) -> None:
        self.ledger = ledger

    def create_writer(self, context: SinkWriterContext) -> SinkWriter:
        return _Writer(self.ledger, context)

    def create_global_committer(self) -> GlobalCommitter:
        return _GlobalCommitter(self.ledger)
