"""The source interface: replayable, split into units that subtasks read and checkpoint.

A split's position is a small dict of plain values (MessagePack-encodable): it is the source's
operator state, restored before any user code runs.

- ``initial_splits(subtask, parallelism)``: what a subtask reads when the job starts afresh.
- ``create_reader(splits, context)``: a reader of these splits.
- Optional ``assign_splits(all_splits, subtask, parallelism)``: a source that defines it gets,
  on restore, the splits of *every* old subtask and picks its own (union state), so that it can
  tell a split nobody reads from one another subtask reads (Kafka's partition discovery).
  Without it, restored splits are dealt out evenly (split state).
- Optional reader method ``notify_checkpoint_complete(checkpoint_id, positions)``: the
  positions a completed checkpoint holds (Kafka commits them to the consumer group).
- Optional ``check()``: called on the driver before the job is submitted (a broker reachable,
  a topic present); raises ``ConfigurationError``.

**Threading:** a reader is used by its subtask's task thread only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class SourceReaderContext:
    job_name: str
    operator_uid: str
    subtask: int
    parallelism: int


class SourceReader(Protocol):
    def poll(self, max_records: int) -> list[Any] | None:
        """Up to ``max_records`` records; an empty list if none is ready; None at the end."""

    def snapshot(self) -> list[dict]:
        """The position of every split this reader owns, as of the last record returned."""

    def close(self) -> None: ...


# Optional on a reader: ``last_poll_splits() -> list[SplitRun]``, which split each record of the
# last poll came from, as runs of consecutive records (split id, count). With it, watermarks
# are generated per split (a slow Kafka partition holds back the others' windows, an idle one
# is left out), as Flink's sources do; without it, per source subtask. A reader that has it and
# whose splits end has ``finished_splits() -> list[str]`` too: the splits that reached their end
# since the last call. A finished split's watermark then stops holding the subtask's back (a
# file read to its end, a sequence's range after a restore at lower parallelism), as Flink
# releases a finished split's watermark output.
SplitRun = tuple[str, int]


class Source(Protocol):
    def initial_splits(self, subtask: int, parallelism: int) -> list[dict]:
        """The splits subtask ``subtask`` reads when the job starts without a checkpoint."""

    def create_reader(self, splits: list[dict], context: SourceReaderContext) -> SourceReader: ...
