"""An operator whose program declared its output type (``map(f, output_type=Types.ROW(...))``):
its results are converted as PyFlink converts them (``declared_types/conversion.py``) before
they go on.

A wrapper, so that operators without a declared type (most, and all of barrierflow's own
jobs) pay nothing. Side output records keep their values: their tag declares their type.

**Threading:** the task thread, as the operator it wraps.
"""

from __future__ import annotations

from typing import Any, overload

from barrierflow.datastream.output_tag import SideOutput
from barrierflow.declared_types.conversion import BatchConverter, Converter
from barrierflow.protocol.record_batch import RecordBatch
from barrierflow.runtime.operators import Operator


class TypedOutput:
    def __init__(
        self, inner: Operator, convert: Converter, convert_all: BatchConverter | None
    ) -> None:
        self._inner = inner
        self._convert = convert
        self._convert_all = convert_all

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def _converted(self, records: list[Any]) -> list[Any]:
        if records and self._convert_all is not None:
            done = self._convert_all(records)  # the common case, checked in C
            if done is not None:
                return done
        convert = self._convert  # value by value: side outputs kept, a wrong value named
        out = []
        record = None
        try:
            for record in records:
                out.append(record if type(record) is SideOutput else convert(record))
        except TypeError as e:
            raise self._inner.failure(record, e) from e
        return out

    @overload
    def _converted_batch(self, batch: RecordBatch) -> RecordBatch: ...

    @overload
    def _converted_batch(self, batch: RecordBatch | None) -> RecordBatch | None: ...

    def _converted_batch(self, batch: RecordBatch | None) -> RecordBatch | None:
        if batch is None:
            return None
        return RecordBatch(self._converted(batch.values), batch.timestamps)

    def process_batch(self, batch: RecordBatch) -> RecordBatch:
        return self._converted_batch(self._inner.process_batch(batch))

    def process_batch2(self, batch: RecordBatch) -> RecordBatch:
        """Input 2 of a two-input operator (one that ``takes_two_inputs``)."""
        batch = self._inner.process_batch2(batch)  # type: ignore[attr-defined]
        return self._converted_batch(batch)

    def on_watermark(self, watermark: int) -> RecordBatch | None:
        return self._converted_batch(self._inner.on_watermark(watermark))

    def on_processing_time(self, now_ms: int) -> RecordBatch | None:
        return self._converted_batch(self._inner.on_processing_time(now_ms))

    def finish(self) -> RecordBatch | None:
        return self._converted_batch(self._inner.finish())

    def take_completed(self) -> list[RecordBatch | int]:
        return [
            self._converted_batch(item) if type(item) is RecordBatch else item
            for item in self._inner.take_completed()
        ]
