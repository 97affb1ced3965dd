"""The sink interface: a writer and an idempotent committer (two-phase commit).

- ``write(records)`` between barriers;
- ``prepare_commit(checkpoint_id)`` at the barrier (synchronous phase): make what was written
  durable but invisible and return *committables* (small dicts of plain values) that go into the
  checkpoint;
- ``commit(committables)`` when the checkpoint is complete, and again after a failover for the
  committables of the restored checkpoint: it must be idempotent;
- ``recover(committables, ...)`` once after a restore: commit these, discard everything else this
  subtask left uncommitted.

**Threading:** the subtask's task thread only.
"""

from __future__ import annotations

from typing import Any, Protocol


class SinkWriter(Protocol):
    def write(self, records: list[Any]) -> None: ...
    def prepare_commit(self, checkpoint_id: int) -> list[dict]: ...
    def commit(self, committables: list[dict]) -> None: ...
    def recover(self, committables: list[dict], parallelism: int) -> None: ...
    def close(self) -> None: ...


class Sink(Protocol):
    def create_writer(self, subtask: int, attempt: int) -> SinkWriter: ...
