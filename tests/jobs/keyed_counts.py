"""Jobs whose keyed state the state processor reads and writes: per key a count, a sum, the last
values (list state) and counts by parity (map state), over values that all arrive and then the
source goes idle, so that a savepoint taken after the output of every value was committed holds
exactly the state computed in the test; and a job that profiles keys in a ``ROW_NAMED`` state
whose declared type changes between versions (schema evolution), as a job file too
(``BARRIERFLOW_TEST_PROFILE_VERSION``: 1, 2 or 3).

Shipped to Spark workers by value (cloudpickle), since ``tests`` is not installed there.
"""

from __future__ import annotations

import os
import tempfile
import time
from typing import Any

import cloudpickle

from barrierflow.common import RestartStrategies, Row, Types
from barrierflow.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from barrierflow.datastream.connectors.base import SourceReader, SourceReaderContext, Split
from barrierflow.datastream.connectors.file_system import FileSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.state import (
    ListStateDescriptor,
    MapStateDescriptor,
    ValueStateDescriptor,
)

COUNT = ValueStateDescriptor("count", Types.LONG())
SUM = ValueStateDescriptor("sum", Types.LONG())
LAST = ListStateDescriptor("last", Types.LONG())
BY_PARITY = MapStateDescriptor("by_parity", Types.STRING(), Types.LONG())


class ThenIdle(NumberSequenceSource):
    """``NumberSequenceSource(start, end)`` whose subtasks stay idle once they read their values;
    with ``pause_s``, they read ``batch`` values at a time and pause after each batch."""

    def __init__(self, start: int, end: int, batch: int = 0, pause_s: float = 0.0) -> None:
        super().__init__(start, end)
        self.batch, self.pause_s = batch, pause_s

    def is_bounded(self) -> bool:
        return False

    def create_reader(self, context: SourceReaderContext) -> SourceReader:
        return _IdleAtTheEnd(super().create_reader(context), self.batch, self.pause_s)


class _IdleAtTheEnd(SourceReader):
    def __init__(self, reader: SourceReader, batch: int, pause_s: float) -> None:
        self._reader, self._batch, self._pause_s = reader, batch, pause_s

    def add_splits(self, splits: list[Split]) -> None:
        self._reader.add_splits(splits)

    def notify_no_more_splits(self) -> None:
        self._reader.notify_no_more_splits()

    def poll(self, max_records: int) -> list[Any]:
        found = self._reader.poll(min(max_records, self._batch or max_records))
        if found is None:
            time.sleep(0.01)
            return []
        time.sleep(self._pause_s)
        return found

    def snapshot_state(self, checkpoint_id: int) -> list[Split]:
        return self._reader.snapshot_state(checkpoint_id)


class CountAndSum(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(COUNT)
        self.sum = runtime_context.get_state(SUM)
        self.last = runtime_context.get_list_state(LAST)
        self.by_parity = runtime_context.get_map_state(BY_PARITY)

    def process_element(self, value, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        self.sum.update((self.sum.value() or 0) + value)
        self.last.update([*self.last.get(), value][-3:])
        parity = "odd" if value % 2 else "even"
        self.by_parity.put(parity, (self.by_parity.get(parity) or 0) + 1)
        yield [ctx.get_current_key(), value, count]


def counts_job(
    env: StreamExecutionEnvironment,
    n: int,
    keys: int,
    out_dir: str,
    checkpoint_dir: str,
    state_backend: str = "hashmap",
    source: Any = None,
    extra_operator: bool = False,
    source_uid: str = "values",
) -> StreamExecutionEnvironment:
    """Values ``0..n-1`` keyed by ``value % keys`` (a declared LONG key) into ``CountAndSum``
    (uid ``counter``), whose ``[key, value, count]`` go to a FileSink; with ``extra_operator``,
    a second keyed operator (uid ``extra``) counts the same keys again."""
    env.configure(
        {"state.backend.type": state_backend, "execution.checkpointing.incremental": True}
    )
    env.enable_checkpointing(200)
    env.get_checkpoint_config().set_checkpoint_storage(checkpoint_dir)
    env.set_restart_strategy(RestartStrategies.no_restart())
    stream = env.from_source(source or ThenIdle(0, n - 1), "values").uid(source_uid)
    counted = stream.key_by(lambda v: v % keys, Types.LONG()).process(CountAndSum()).uid("counter")
    if extra_operator:
        counted = counted.key_by(lambda r: r[0], Types.LONG()).process(Again()).uid("extra")
    counted.sink_to(FileSink(out_dir)).uid("sink")
    return env


class Again(KeyedProcessFunction):
    def open(self, runtime_context):
        self.seen = runtime_context.get_state(ValueStateDescriptor("seen", Types.LONG()))

    def process_element(self, record, ctx):
        self.seen.update((self.seen.value() or 0) + 1)
        yield record


# --- a profile whose declared type evolves --------------------------------------------------

PROFILE_TYPES = {
    1: Types.ROW_NAMED(["id", "name", "visits"], [Types.INT(), Types.STRING(), Types.INT()]),
    # added (with a default and without), removed, reordered, widened
    2: Types.ROW_NAMED(
        ["visits", "id", "country", "note"],
        [Types.LONG(), Types.LONG(), Types.STRING(), Types.STRING()],
    ),
    # "name" renamed "title": refused
    3: Types.ROW_NAMED(["id", "title", "visits"], [Types.INT(), Types.STRING(), Types.INT()]),
}


class Profiles(KeyedProcessFunction):
    """Keeps one profile per key and emits it, as a dict, after each record."""

    def __init__(self, version: int) -> None:
        self.version = version

    def open(self, runtime_context):
        descriptor = ValueStateDescriptor("profile", PROFILE_TYPES[self.version])
        self.profile = runtime_context.get_state(descriptor.set_field_defaults({"country": "fr"}))

    def process_element(self, value, ctx):
        key = ctx.get_current_key()
        profile = self.profile.value()
        visits = (profile.visits if profile else 0) + 1
        if self.version == 2:
            country, note = (profile.country, profile.note) if profile else ("new", None)
            profile = Row(visits, key, country, note)
        else:  # versions 1 and 3 have one layout
            profile = Row(key, f"user-{key}", visits)
        profile.set_field_names(list(PROFILE_TYPES[self.version].field_names))
        self.profile.update(profile)
        yield profile.as_dict()


def profiles_job(
    env: StreamExecutionEnvironment,
    version: int,
    n: int,
    out_dir: str,
    checkpoint_dir: str,
    state_backend: str = "hashmap",
    idle: bool = True,
) -> StreamExecutionEnvironment:
    """Values ``0..n-1`` keyed by ``value % 4`` into ``Profiles(version)`` (uid ``profiles``).
    A version after the first reads its values from a new source (uid ``values-v<version>``):
    the first one's positions are at the end of its values, so its state is left behind
    (restore with -n)."""
    env.configure(
        {"state.backend.type": state_backend, "execution.checkpointing.incremental": True}
    )
    env.enable_checkpointing(200)
    env.get_checkpoint_config().set_checkpoint_storage(checkpoint_dir)
    env.set_restart_strategy(RestartStrategies.no_restart())
    source = ThenIdle(0, n - 1) if idle else NumberSequenceSource(0, n - 1)
    (
        env.from_source(source, "values")
        .uid("values" if version == 1 else f"values-v{version}")
        .key_by(lambda v: v % 4, Types.LONG())
        .process(Profiles(version))
        .uid("profiles")
        .sink_to(FileSink(out_dir))
        .uid("sink")
    )
    return env


cloudpickle.register_pickle_by_value(__import__(__name__, fromlist=["_"]))

if __name__ == "__main__":  # a job file: `barrierflow run tests/jobs/keyed_counts.py -s ...`
    version = int(os.environ.get("BARRIERFLOW_TEST_PROFILE_VERSION", "2"))
    scratch = tempfile.mkdtemp()
    job = profiles_job(
        StreamExecutionEnvironment().set_parallelism(2), version, 8, f"{scratch}/out",
        f"file://{scratch}/ckpt", idle=False,
    )  # fmt: skip
    job.execute(f"profiles-v{version}")
