"""Where records a job sends to the driver end up (``print()``, ``execute_and_collect``).

A collector is registered in this process when the program asks for one, under an id that the
sink carries to the executors; the JobMaster hands it each ``CollectedRecords`` message. A
collector takes each delivery id once: a batch a recovery sends again is not printed or
collected twice.

**Threading:** ``deliver`` on the JobMaster's thread; a ``QueueCollector`` is read by the user's.
"""

from __future__ import annotations

import pickle
import queue
import sys
import threading
import uuid
from collections.abc import Callable
from typing import Any, TextIO

from barrierflow.control.messages import CollectedRecords


class Collector:
    def __init__(self) -> None:
        self.id = uuid.uuid4().hex
        self._seen: set[str] = set()

    def accept(self, message: CollectedRecords) -> None:
        if message.delivery in self._seen:
            return
        self._seen.add(message.delivery)
        self.take(pickle.loads(message.records), message.subtask, message.parallelism)

    def take(self, records: list[Any], subtask: int, parallelism: int) -> None:
        raise NotImplementedError


class PrintCollector(Collector):
    """Prints each record as PyFlink's ``print()`` does: ``str(record)``, prefixed with the
    identifier, if any, and the subtask's number (from 1) when the sink runs in more than one
    subtask (``id:2> record``, ``2> record``, ``id> record``)."""

    def __init__(
        self,
        identifier: str | None = None,
        text: Callable[[Any], str] = str,
        out: TextIO | None = None,
    ) -> None:
        """``text``: how a record is written (``java_strings.printer`` of its type)."""
        super().__init__()
        self._identifier = identifier or ""
        self._text = text
        self._out = out

    def take(self, records: list[Any], subtask: int, parallelism: int) -> None:
        out = self._out or sys.stdout
        prefix = self._identifier
        if parallelism > 1:
            prefix += f"{':' if prefix else ''}{subtask + 1}"
        if prefix:
            prefix += "> "
        text = self._text
        out.write("".join(f"{prefix}{text(record)}\n" for record in records))
        out.flush()


class QueueCollector(Collector):
    def __init__(self) -> None:
        super().__init__()
        self.records: queue.SimpleQueue[Any] = queue.SimpleQueue()

    def take(self, records: list[Any], subtask: int, parallelism: int) -> None:
        for record in records:
            self.records.put(record)


_collectors: dict[str, Collector] = {}
_lock = threading.Lock()


def register(collector: Collector) -> str:
    with _lock:
        _collectors[collector.id] = collector
    return collector.id


def unregister(collector_id: str) -> None:
    with _lock:
        _collectors.pop(collector_id, None)


def deliver(message: CollectedRecords) -> None:
    with _lock:
        collector = _collectors.get(message.collector)
    if collector is not None:  # unknown: the program closed its iterator already
        collector.accept(message)
