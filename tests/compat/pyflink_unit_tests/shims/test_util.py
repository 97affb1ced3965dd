"""PyFlink's ``DataStreamTestSinkFunction`` on barrierflow: a sink function whose records come
back to the test's process, read as Flink's Java test sink gives them: Java's ``toString`` of
a record of a declared type (``+I[a, 1]``, ``(a,1)``), else the Python value (``str()``'d)."""

from __future__ import annotations

import queue
from typing import Any

from barrierflow.cluster import collected_records
from barrierflow.cluster.collected_records import QueueCollector
from barrierflow.common.watermark_strategy import TimestampAssigner
from barrierflow.connectors.builtin.collect_sink import CollectSink
from barrierflow.datastream.functions import SinkFunction
from barrierflow.declared_types.java_strings import java_text


class _TypedCollectSink(CollectSink):
    """A collect sink that tells its owner the type of the stream it is added to."""

    def __init__(self, collector: str, owner: DataStreamTestSinkFunction) -> None:
        super().__init__(collector)
        self._owner = owner

    def set_input_type(self, type_info: Any) -> None:
        self._owner.type_info = type_info

    def __getstate__(self) -> dict:  # what executors get: the collector's id alone
        return {"collector": self.collector}

    def __setstate__(self, state: dict) -> None:
        self.collector = state["collector"]


class DataStreamTestSinkFunction(SinkFunction):
    def __init__(self) -> None:
        self._collector = QueueCollector()
        collected_records.register(self._collector)
        self.type_info: Any = None
        super().__init__(_TypedCollectSink(self._collector.id, self))

    def _drain(self) -> list[Any]:
        records = []
        while True:
            try:
                records.append(self._collector.records.get_nowait())
            except queue.Empty:
                return records

    def get_results(self, is_python_object: bool = False, stringify: bool = True) -> list[Any]:
        records = self._drain()
        if not is_python_object:
            text = java_text(self.type_info)
            return [text(r) for r in records]
        return [str(r) for r in records] if stringify else records

    def clear(self) -> None:
        self._drain()


class SecondColumnTimestampAssigner(TimestampAssigner):
    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return int(value[1])
