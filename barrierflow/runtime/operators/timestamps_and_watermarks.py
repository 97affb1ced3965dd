"""The operator where event time starts: it gives records their timestamps by a
``WatermarkStrategy`` and makes the watermarks of its subtask, one per source split where the
source says where its records came from.

Per-split watermarks follow Flink's sources (``ProgressiveTimestampsAndWatermarks``: a
generator per split, the subtask's watermark the minimum over the active ones), but the
generators live here, in the assigner right after the source, not in the source operator: the
timestamps they need are made here, by the strategy's assigner, after the source. What the
source's reader told of each poll's splits reaches this operator inside the batch it polled
(``RecordBatch.splits``), not beside it (docs/adr/0025-split-provenance-in-the-batch.md), so a
job without event time, or whose source tells no splits, pays nothing for it.

**Threading:** the task thread only.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import repeat
from typing import Any

from barrierflow.eventtime.timestamps import NO_TIMESTAMP
from barrierflow.eventtime.watermark_strategy import (
    TimestampAssigner,
    WatermarkGenerator,
    WatermarkStrategy,
)
from barrierflow.eventtime.watermark_valve import MIN_WATERMARK
from barrierflow.protocol.record_batch import RecordBatch
from barrierflow.runtime.operators.stream_operator import Operator, OperatorContext


class SplitWatermarks:
    """The watermark generators of the splits a source subtask reads, one each, made on a
    split's first records. The subtask's watermark is the minimum over the active splits (an
    idle one left out); a split that ended is released and no longer holds it back. With no
    split left, the watermark stays where the last ones took it until a new split brings
    records, and with ``with_idleness`` the subtask goes idle once the idle timeout passed since
    the last one ended (Flink's goes idle at once; waiting keeps the records of a file read next
    from being late when the others' watermarks ran ahead in between)."""

    def __init__(self, strategy: WatermarkStrategy) -> None:
        self._strategy = strategy
        self._generators: dict[str, WatermarkGenerator] = {}
        self._released_watermark = MIN_WATERMARK  # of splits ended since the last emit
        self._released_at_ms = 0  # when the last split left ended

    @property
    def splits(self) -> list[str]:
        """The splits whose watermarks count, in the order their first records came."""
        return list(self._generators)

    def on_events(self, runs: list[tuple[str, int]], timestamps: list[int], now_ms: int) -> None:
        """The records of a batch, ``timestamps`` in order, came from the splits of ``runs``."""
        at = 0
        for split, n in runs:
            generator = self._generators.get(split)
            if generator is None:
                made = self._strategy.create_generator()
                assert made is not None  # split watermarks: the strategy has watermarks
                generator = self._generators[split] = made
            generator.on_event(max(timestamps[at : at + n]), now_ms)
            at += n

    def release(self, splits: list[str], now_ms: int) -> None:
        """``splits`` reached their end: their watermarks stop counting. Where none is left,
        the subtask's watermark still advances to what the last of them reached."""
        for split in splits:
            generator = self._generators.pop(split, None)
            if generator is not None:
                last = generator.on_periodic_emit(now_ms)
                self._released_watermark = max(self._released_watermark, last)
        if not self._generators:
            self._released_at_ms = now_ms

    def periodic(self, now_ms: int, idle_reported: bool) -> tuple[int | None, bool]:
        """(the subtask's watermark, or None while every split is idle; whether it is idle)."""
        marks = [(g.on_periodic_emit(now_ms), g.idle) for g in self._generators.values()]
        active = [watermark for watermark, idle in marks if not idle]
        watermark = min(active) if active else None
        idle = not active
        if not marks:  # every split ended: idle once the idle timeout passed since
            watermark = self._released_watermark
            timeout = self._strategy.idle_timeout_ms
            idle = idle_reported or (
                timeout is not None and now_ms - self._released_at_ms >= timeout
            )
        self._released_watermark = MIN_WATERMARK
        return watermark, idle


class TimestampsAndWatermarksOperator(Operator):
    """Gives records their event timestamps by a ``WatermarkStrategy`` and generates the
    watermarks of this subtask (``periodic_watermark``, every ``pipeline.auto-watermark-
    interval``). After a source (``from_source(source, strategy, name)``) it runs in the
    source's task; after any other operator (``assign_timestamps_and_watermarks``), watermarks
    from upstream stop here, as in Flink, but the end of input passes.

    Right after a source whose reader says which split each record came from, its batches come
    with their ``splits``: from the first such batch on, the subtask's watermark is that of
    ``SplitWatermarks``. Otherwise one generator serves the subtask."""

    assigns_timestamps = True

    def open(self, ctx: OperatorContext) -> None:
        super().open(ctx)
        strategy: WatermarkStrategy = self.spec.function
        assigner = strategy.timestamp_assigner
        # Looked up once: the strategy's extract_timestamp would ask for every record.
        self._assigner: Callable[[Any, int], int] | None = (
            assigner.extract_timestamp if isinstance(assigner, TimestampAssigner) else assigner
        )
        self._generator: WatermarkGenerator | None = strategy.create_generator()
        self.split_watermarks = SplitWatermarks(strategy)
        self._per_split = False  # once a batch came with its splits
        self._now_ms = 0
        self._idle_reported = False
        self.watermark = MIN_WATERMARK

    def process_batch(self, batch: RecordBatch) -> RecordBatch:
        records = batch.values
        timestamps = self._timestamps(records, batch.timestamps)
        splits = batch.splits
        if timestamps:
            try:
                highest = max(timestamps)
            except TypeError:  # not all numbers
                highest = None
            if type(highest) is not int or type(timestamps[0]) is not int:
                # A cheap look (the highest and the first), not a check of every record.
                self._refuse_other_than_int(records, timestamps)
            if self._generator is None:
                pass
            elif splits is None:
                assert highest is not None  # an int: refused above otherwise
                self._generator.on_event(highest, self._now_ms)
            else:
                self._per_split = True
                self.split_watermarks.on_events(splits.runs, timestamps, self._now_ms)
        if splits is not None and splits.ended:
            self.split_watermarks.release(splits.ended, self._now_ms)
        return RecordBatch(records, timestamps)

    def _timestamps(self, records: list[Any], timestamps: list[int] | None) -> list[int]:
        """The records' timestamps: by the assigner (given the ones they had), or as they
        came."""
        if self._assigner is not None:
            previous = repeat(NO_TIMESTAMP) if timestamps is None else timestamps
            try:
                return list(map(self._assigner, records, previous))
            except Exception:  # noqa: BLE001 - raised again, naming the record
                return self._extract_one_by_one(records, previous)
        if timestamps is None:
            return [NO_TIMESTAMP] * len(records)
        return timestamps

    def _refuse_other_than_int(self, records: list[Any], timestamps: list[Any]) -> None:
        for record, timestamp in zip(records, timestamps, strict=True):
            if type(timestamp) is not int:
                raise self.failure(record, TypeError(
                    "the timestamp assigner must return epoch milliseconds as an int, "
                    f"not {type(timestamp).__name__} {timestamp!r:.50}"))  # fmt: skip

    def _extract_one_by_one(self, records: list[Any], previous: Any) -> list[int]:
        """Again, record by record, to name the record the assigner failed on."""
        assigned: list[int] = []
        assigner = self._assigner
        assert assigner is not None  # called where the assigner failed
        record = None
        try:
            # ``previous`` may be an endless repeat of NO_TIMESTAMP
            for record, timestamp in zip(records, previous, strict=False):
                assigned.append(assigner(record, timestamp))
        except Exception as e:
            raise self.failure(record, e) from e
        return assigned

    def periodic_watermark(self, now_ms: int) -> tuple[int | None, bool | None]:
        """(a watermark above the last one, or None; True/False when the subtask became idle
        or active again since the last call, else None)."""
        self._now_ms = now_ms
        if self._generator is None:
            return None, None
        if self._per_split:
            watermark, idle = self.split_watermarks.periodic(now_ms, self._idle_reported)
        else:
            watermark = self._generator.on_periodic_emit(now_ms)
            idle = self._generator.idle
        status = None
        if idle != self._idle_reported:
            self._idle_reported = status = idle
        if watermark is not None and watermark > self.watermark:
            self.watermark = watermark
            return watermark, status
        return None, status
