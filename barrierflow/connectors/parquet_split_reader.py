"""The reader of the table sources (Delta, Iceberg): a split is one Parquet data file, read one
at a time, asking the enumerator for the next when it has none left; its position is the number
of rows already emitted, so a restored reader resumes at the first row after the checkpoint.
Records are ``Row``s named by the table's columns; partition columns that a file does not hold
(Delta's) come from the split's ``partition`` values, as text, typed by the table's schema.

**Threading:** the task thread. **I/O:** reads the files through the job's file systems.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from barrierflow.checkpoint.file_systems import resolve
from barrierflow.common.types import Row
from barrierflow.connectors.source_reader import SourceReader, SourceReaderContext, SplitRun
from barrierflow.connectors.split_enumerator import Split

_BATCH_ROWS = 8192


class ParquetSplitReader(SourceReader):
    def __init__(self, schema: pa.Schema, context: SourceReaderContext) -> None:
        self._schema = schema
        self._names = list(schema.names)
        self._request = context.send_split_request
        self._splits: deque[Split] = deque()  # the first is being read
        self._rows: Iterator[tuple] | None = None
        self._file: Any = None  # of the split being read
        self._asked = False
        self._no_more = False
        self._last: list[SplitRun] = []
        self._finished: list[str] = []

    def start(self) -> None:
        if not self._splits:
            self._ask()

    def _ask(self) -> None:
        if not self._asked and not self._no_more:
            self._asked = True
            self._request()

    def add_splits(self, splits: list[Split]) -> None:
        self._splits += [dict(s) for s in splits]
        self._asked = False

    def notify_no_more_splits(self) -> None:
        self._no_more = True

    def poll(self, max_records: int) -> list[Any] | None:
        self._last = []
        if self._rows is None:
            if not self._splits:
                if self._no_more:
                    return None
                self._ask()
                return []
            self._rows = self._open(self._splits[0])
        split = self._splits[0]
        out: list[Any] = []
        for values in self._rows:
            row = Row(*values)
            row.set_field_names(self._names)
            out.append(row)
            if len(out) >= max_records:
                break
        else:
            self._end_of_file()
        split["offset"] += len(out)
        if out:
            self._last = [(split["path"], len(out))]
        return out

    def _open(self, split: Split) -> Iterator[tuple]:
        """The rows of the split's file from its offset on, as tuples in the schema's order."""
        fs, path = resolve(split["path"])
        self._file = fs.open_input_file(path)
        file = pq.ParquetFile(self._file)
        partition = split.get("partition") or {}
        in_file = [n for n in self._names if n not in partition]
        constants = {
            name: pa.scalar(value).cast(self._schema.field(name).type).as_py()
            if value is not None
            else None
            for name, value in partition.items()
        }
        skip = split["offset"]
        for batch in file.iter_batches(batch_size=_BATCH_ROWS, columns=in_file):
            if skip >= batch.num_rows:
                skip -= batch.num_rows
                continue
            columns = batch.slice(skip).to_pydict()
            skip = 0
            count = len(next(iter(columns.values()))) if columns else 0
            for i in range(count):
                yield tuple(constants[n] if n in constants else columns[n][i] for n in self._names)

    def _end_of_file(self) -> None:
        self.close()
        self._finished.append(self._splits.popleft()["path"])
        if not self._splits:
            self._ask()

    def split_runs(self) -> list[SplitRun]:
        return self._last

    def finished_splits(self) -> list[str]:
        done, self._finished = self._finished, []
        return done

    def snapshot_state(self, checkpoint_id: int) -> list[Split]:
        return [dict(s) for s in self._splits]

    def close(self) -> None:
        self._rows = None
        if self._file is not None:
            self._file.close()
            self._file = None
