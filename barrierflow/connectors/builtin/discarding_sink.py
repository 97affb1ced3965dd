"""DiscardingSink: drops every record; for benchmarks and tests of the pipeline alone.
Performs no I/O."""

from __future__ import annotations

from typing import Any

from barrierflow.connectors.interfaces.sink import Sink, SinkWriter, SinkWriterContext


class DiscardingSink(Sink):
    def create_writer(self, context: SinkWriterContext) -> SinkWriter:
        return _DiscardingWriter()


class _DiscardingWriter(SinkWriter):
    def write(self, records: list[Any]) -> None:
        pass

    def prepare_commit(self, checkpoint_id: int) -> list[Any]:
        return []
