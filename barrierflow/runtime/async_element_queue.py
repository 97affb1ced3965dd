"""The elements of an async I/O operator between their arrival and their emission, and the
order they may leave in (Flink's ``StreamElementQueue``).

Records and watermarks enter in the order they arrive. At most ``capacity`` records are
started and not yet emitted; the others wait, in order, until a started one is emitted
(``to_start``). ``ready`` hands out what may be emitted now:

- **ordered**: records in the order they arrived, each once it and every one before it
  completed; a watermark once every record before it was emitted;
- **unordered**: records as they complete, but never across a watermark: the records between
  two watermarks form a segment, only the first segment emits, and a watermark leaves once its
  segment is empty. So a watermark never overtakes a record that arrived before it, and no
  record arrives downstream after a watermark it preceded.

``pending`` lists every record not emitted yet, started or not, in arrival order: what a
checkpoint keeps, to be invoked again after a restore. The queue is driven by the task thread
only; it knows nothing of threads or event loops. Performs no I/O.
"""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from barrierflow.eventtime.timestamps import NO_TIMESTAMP
from barrierflow.protocol.record_batch import RecordBatch


class OutputOrder(enum.Enum):
    ORDERED = "ordered"
    UNORDERED = "unordered"


@dataclass(eq=False, slots=True)
class Element:
    """One record in the queue: its timestamp (None on a stream without event time) and, once
    its call completed, its outputs."""

    number: int  # its place in arrival order
    record: Any
    timestamp: int | None
    outputs: list[Any] | None = None  # set on completion
    started: bool = False
    segment: _Segment | None = None  # unordered: the segment it belongs to

    @property
    def done(self) -> bool:
        return self.outputs is not None


@dataclass(eq=False, slots=True)
class _Segment:
    """Unordered: the records between two watermarks; ``watermark`` closes it (None: the last,
    still open)."""

    unemitted: int = 0
    completed: list[Element] = field(default_factory=list)  # in completion order
    watermark: int | None = None


class ElementQueue:
    def __init__(self, capacity: int, order: OutputOrder) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
            raise ValueError(f"the capacity of an async operator must be at least 1, not "
                             f"{capacity!r}")  # fmt: skip
        self.capacity = capacity
        self.order = order
        self._unemitted: dict[int, Element] = {}  # by arrival number, in arrival order
        self._arrivals = 0
        self._waiting: deque[Element] = deque()  # not started, in arrival order
        self._started = 0  # started and not emitted
        self._ordered: deque[Element | int] = deque()  # ordered: records and watermarks
        self._segments: deque[_Segment] = deque([_Segment()])  # unordered

    def __len__(self) -> int:
        """Records not emitted yet."""
        return len(self._unemitted)

    @property
    def full(self) -> bool:
        """Whether the operator should take no more input until some records leave."""
        return len(self._unemitted) >= self.capacity

    @property
    def holds_watermarks(self) -> bool:
        """Whether a watermark waits for records before it."""
        if self.order is OutputOrder.ORDERED:
            return any(type(item) is int for item in self._ordered)
        return len(self._segments) > 1

    def add_record(self, record: Any, timestamp: int | None) -> Element:
        element = Element(self._arrivals, record, timestamp)
        self._unemitted[self._arrivals] = element
        self._arrivals += 1
        self._waiting.append(element)
        if self.order is OutputOrder.ORDERED:
            self._ordered.append(element)
        else:
            segment = self._segments[-1]
            segment.unemitted += 1
            element.segment = segment
        return element

    def add_watermark(self, watermark: int) -> None:
        if self.order is OutputOrder.ORDERED:
            self._ordered.append(watermark)
        else:
            self._segments[-1].watermark = watermark
            self._segments.append(_Segment())

    def to_start(self) -> list[Element]:
        """The waiting records that may start now (up to the capacity), marked started."""
        starting = []
        while self._waiting and self._started < self.capacity:
            element = self._waiting.popleft()
            element.started = True
            self._started += 1
            starting.append(element)
        return starting

    def complete(self, element: Element, outputs: list[Any]) -> None:
        """The call of ``element`` completed with ``outputs`` (a retried call completes once)."""
        if element.outputs is not None:
            raise ValueError(f"the call for {element.record!r:.100} completed twice")
        element.outputs = outputs
        if element.segment is not None:
            element.segment.completed.append(element)

    def ready(self) -> list[RecordBatch | int]:
        """What may be emitted now, in order: batches of outputs and watermarks."""
        out = _Emission()
        if self.order is OutputOrder.ORDERED:
            queue = self._ordered
            while queue:
                head = queue[0]
                if isinstance(head, int):  # a watermark
                    queue.popleft()
                    out.watermark(head)
                elif head.done:
                    queue.popleft()
                    out.element(head)
                else:
                    break
        else:
            segments = self._segments
            while True:
                first = segments[0]
                for element in first.completed:
                    out.element(element)
                first.unemitted -= len(first.completed)
                first.completed.clear()
                if first.unemitted or first.watermark is None:
                    break
                out.watermark(first.watermark)
                segments.popleft()
        for element in out.elements:
            element.segment = None
        self._forget(out.elements)
        return out.items()

    def _forget(self, emitted: list[Element]) -> None:
        for element in emitted:
            del self._unemitted[element.number]
        self._started -= len(emitted)

    def pending(self) -> list[Element]:
        """Every record not emitted, in arrival order."""
        return list(self._unemitted.values())


class _Emission:
    """What ``ready`` collects: runs of outputs become one batch, with a timestamp column
    where a record had a timestamp."""

    def __init__(self) -> None:
        self.elements: list[Element] = []
        self._items: list[RecordBatch | int] = []
        self._values: list[Any] = []
        self._timestamps: list[int] = []
        self._timed = False

    def element(self, element: Element) -> None:
        self.elements.append(element)
        outputs = element.outputs
        assert outputs is not None  # only a completed call is emitted
        self._values.extend(outputs)
        ts = element.timestamp
        if ts is not None:
            self._timed = True
        self._timestamps.extend([NO_TIMESTAMP if ts is None else ts] * len(outputs))

    def watermark(self, watermark: int) -> None:
        self._close_run()
        self._items.append(watermark)

    def _close_run(self) -> None:
        if self._values:
            self._items.append(RecordBatch(self._values, self._timestamps if self._timed else None))
        self._values, self._timestamps, self._timed = [], [], False

    def items(self) -> list[RecordBatch | int]:
        self._close_run()
        return self._items
