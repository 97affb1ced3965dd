"""An operator whose program declared its output type (``map(f, output_type=Types.ROW(...))``):
its results are converted as PyFlink converts them (``type_conversion.py``) before they go on.

A wrapper, so that operators without a declared type (most, and all of barrierflow's own
jobs) pay nothing. Side output records keep their values: their tag declares their type.

**Threading:** the task thread, as the operator it wraps.
"""

from __future__ import annotations

from typing import Any

from barrierflow.runtime.operators import Operator, Timed
from barrierflow.side_outputs import SideOutput
from barrierflow.type_conversion import BatchConverter, Converter


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

    def _converted_timed(self, timed: Timed | None) -> Timed | None:
        return None if timed is None else (self._converted(timed[0]), timed[1])

    def process_batch(self, records: list[Any]) -> list[Any]:
        return self._converted(self._inner.process_batch(records))

    def process_timed(self, records: list[Any], timestamps: list[int]) -> Timed:
        out, out_ts = self._inner.process_timed(records, timestamps)
        return self._converted(out), out_ts

    def on_watermark(self, watermark: int) -> Timed | None:
        return self._converted_timed(self._inner.on_watermark(watermark))

    def on_processing_time(self, now_ms: int) -> Timed | None:
        return self._converted_timed(self._inner.on_processing_time(now_ms))

    def finish(self) -> list[Any]:
        return self._converted(self._inner.finish())
