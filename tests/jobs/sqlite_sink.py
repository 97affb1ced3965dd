"""A new exactly-once sink is only a writer and a committer: records staged in SQLite under a
transaction id at the barrier, moved to table ``records`` (as JSON) by an idempotent commit.
Shipped to Spark workers by value (cloudpickle), since ``tests`` is not installed there."""

from __future__ import annotations

import contextlib
import itertools
import json
import sqlite3
from typing import Any

import cloudpickle

from barrierflow.datastream.connectors import base as api

SCHEMA = """CREATE TABLE IF NOT EXISTS staged (txn TEXT, record TEXT);
CREATE TABLE IF NOT EXISTS committed (txn TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS records (record TEXT);"""


def connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=60, isolation_level=None)  # transactions by hand
    conn.executescript(SCHEMA)
    return conn


def committed_records(path: str) -> list[Any]:
    with contextlib.closing(connect(path)) as conn:
        return [json.loads(r) for (r,) in conn.execute("SELECT record FROM records")]


class SqliteSink(api.Sink):
    def __init__(self, path: str) -> None:
        self.path = path

    def create_writer(self, context: api.SinkWriterContext) -> api.SinkWriter:
        return SqliteWriter(self.path, context)

    def create_committer(self, context: api.CommitterContext) -> api.Committer:
        return SqliteCommitter(self.path)


class SqliteWriter(api.SinkWriter):
    def __init__(self, path: str, context: api.SinkWriterContext) -> None:
        self._conn = connect(path)
        c = context
        self._txn = f"{c.job_name}/{c.operator_uid}/{c.subtask}/{{}}/{c.attempt}/{{}}".format
        self._numbers = itertools.count()
        self._rows: list[Any] = []

    def write(self, records: list[Any]) -> None:
        self._rows += records

    def prepare_commit(self, checkpoint_id: int) -> list[dict[str, Any]]:
        if not self._rows:
            return []
        txn = self._txn(checkpoint_id, next(self._numbers))
        with self._conn:  # one transaction: staged whole or not at all
            self._conn.execute("BEGIN")
            rows = [(txn, json.dumps(r)) for r in self._rows]
            self._conn.executemany("INSERT INTO staged VALUES (?, ?)", rows)
        self._rows = []
        return [{"txn": txn}]

    def close(self) -> None:
        self._conn.close()  # what was not staged is lost: the sources replay it


class SqliteCommitter(api.Committer):
    def __init__(self, path: str) -> None:
        self._conn = connect(path)

    def commit(self, committables: list[api.Committable]) -> None:
        with self._conn:
            self._conn.execute("BEGIN IMMEDIATE")
            for txn in (c.data["txn"] for c in committables):
                if self._conn.execute("SELECT 1 FROM committed WHERE txn = ?", (txn,)).fetchone():
                    continue  # committed before: by an earlier attempt, or another subtask
                self._conn.execute(
                    "INSERT INTO records SELECT record FROM staged WHERE txn = ?", (txn,)
                )
                self._conn.execute("DELETE FROM staged WHERE txn = ?", (txn,))
                self._conn.execute("INSERT INTO committed VALUES (?)", (txn,))

    def abort_lingering(self, recovery: api.Recovery) -> None:
        """Drops what the old subtasks it answers for staged that no checkpoint names."""
        named = {c.data["txn"] for c in recovery.committables}
        with self._conn:
            self._conn.execute("BEGIN IMMEDIATE")
            for (txn,) in self._conn.execute("SELECT DISTINCT txn FROM staged").fetchall():
                if txn not in named and recovery.owns(int(txn.split("/")[-4])):
                    self._conn.execute("DELETE FROM staged WHERE txn = ?", (txn,))

    def close(self) -> None:
        self._conn.close()


cloudpickle.register_pickle_by_value(__import__(__name__, fromlist=["_"]))
