"""The operator where event time starts: it gives records their timestamps by a
``WatermarkStrategy`` and makes the watermarks of its subtask, one per source split where the
source says where its records came from.

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


class TimestampsAndWatermarksOperator(Operator):
    """Gives records their event timestamps by a ``WatermarkStrategy`` and generates the
    watermarks of this subtask (``periodic_watermark``, every ``pipeline.auto-watermark-
    interval``). After a source (``from_source(source, strategy, name)``) it runs in the
    source's task; after any other operator (``assign_timestamps_and_watermarks``), watermarks
    from upstream stop here, as in Flink, but the end of input passes.

    Right after a source whose reader says which split each record came from
    (``last_poll_splits``), the task hands it each batch's ``split_runs``: then each split has
    its own generator, and the subtask's watermark is the minimum over its active splits (an
    idle split left out), as Flink's sources make it; a split that reached its end is released
    (``release_splits``) and no longer holds the watermark back. With no split left, the
    watermark stays where the last ones took it until a new split brings records, and with
    ``with_idleness`` the subtask goes idle once the idle timeout passed since the last one
    ended (Flink's goes idle at once; waiting keeps the records of a file read next from being
    late when the others' watermarks ran ahead in between). Otherwise one generator serves the
    subtask."""

    assigns_timestamps = True

    def open(self, ctx: OperatorContext) -> None:
        super().open(ctx)
        strategy: WatermarkStrategy = self.spec.function
        self._strategy = strategy
        assigner = strategy.timestamp_assigner
        # Looked up once: the strategy's extract_timestamp would ask for every record.
        self._assigner: Callable[[Any, int], int] | None = (
            assigner.extract_timestamp if isinstance(assigner, TimestampAssigner) else assigner
        )
        self._generator: WatermarkGenerator | None = strategy.create_generator()
        self._split_generators: dict[str, WatermarkGenerator] = {}
        self._per_split = False  # once a batch came with its splits
        self._released_watermark = MIN_WATERMARK  # of splits ended since the last emit
        self._released_at_ms = 0  # when the last split left ended
        self.split_runs: list[tuple[str, int]] | None = None  # of the batch about to come
        self._now_ms = 0
        self._idle_reported = False
        self.watermark = MIN_WATERMARK

    def process_batch(self, batch: RecordBatch) -> RecordBatch:
        records = batch.values
        timestamps = batch.timestamps
        if self._assigner is not None:
            previous = repeat(NO_TIMESTAMP) if timestamps is None else timestamps
            try:
                timestamps = list(map(self._assigner, records, previous))
            except Exception:  # noqa: BLE001 - raised again, naming the record
                timestamps = self._extract_one_by_one(records, previous)
        elif timestamps is None:
            timestamps = [NO_TIMESTAMP] * len(records)
        if not timestamps:
            return RecordBatch(records, timestamps)
        try:
            highest = max(timestamps)
        except TypeError:  # not all numbers
            highest = None
        if type(highest) is not int or type(timestamps[0]) is not int:
            # A cheap look (the highest and the first), not a check of every record.
            for record, timestamp in zip(records, timestamps, strict=True):
                if type(timestamp) is not int:
                    raise self.failure(record, TypeError(
                        "the timestamp assigner must return epoch milliseconds as an int, "
                        f"not {type(timestamp).__name__} {timestamp!r:.50}"))  # fmt: skip
        runs, self.split_runs = self.split_runs, None
        if self._generator is None:
            pass
        elif runs is None:
            self._generator.on_event(highest, self._now_ms)
        else:
            self._per_split = True
            at = 0
            for split, n in runs:
                generator = self._split_generators.get(split)
                if generator is None:
                    generator = self._split_generators[split] = self._strategy.create_generator()
                generator.on_event(max(timestamps[at : at + n]), self._now_ms)
                at += n
        return RecordBatch(records, timestamps)

    def _extract_one_by_one(self, records: list[Any], previous: Any) -> list[int]:
        """Again, record by record, to name the record the assigner failed on."""
        assigned: list[int] = []
        record = None
        try:
            # ``previous`` may be an endless repeat of NO_TIMESTAMP
            for record, timestamp in zip(records, previous, strict=False):
                assigned.append(self._assigner(record, timestamp))
        except Exception as e:
            raise self.failure(record, e) from e
        return assigned

    def release_splits(self, splits: list[str]) -> None:
        """``splits`` reached their end: their watermarks stop counting. Where none is left,
        the subtask's watermark still advances to what the last of them reached."""
        for split in splits:
            generator = self._split_generators.pop(split, None)
            if generator is not None:
                last = generator.on_periodic_emit(self._now_ms)
                self._released_watermark = max(self._released_watermark, last)
        if not self._split_generators:
            self._released_at_ms = self._now_ms

    def periodic_watermark(self, now_ms: int) -> tuple[int | None, bool | None]:
        """(a watermark above the last one, or None; True/False when the subtask became idle
        or active again since the last call, else None)."""
        self._now_ms = now_ms
        if self._generator is None:
            return None, None
        if self._per_split:
            marks = [(g.on_periodic_emit(now_ms), g.idle) for g in self._split_generators.values()]
            active = [watermark for watermark, idle in marks if not idle]
            watermark = min(active) if active else None
            idle = not active
            if not marks:  # every split ended: idle once the idle timeout passed since
                watermark = self._released_watermark
                timeout = self._strategy.idle_timeout_ms
                idle = self._idle_reported or (
                    timeout is not None and now_ms - self._released_at_ms >= timeout
                )
            self._released_watermark = MIN_WATERMARK
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
