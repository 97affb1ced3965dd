"""What one task of a savepoint write does, in-process (no Spark): a bootstrap function over the
rows of one new subtask's key groups, in either backend, written as a canonical snapshot that
restores into either backend; its timers; its errors named."""

from __future__ import annotations

import pytest

from barrierflow.checkpoint import file_systems
from barrierflow.checkpoint.state_streams import StorageRestoreStreams
from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.common import Types
from barrierflow.datastream.state import ValueStateDescriptor
from barrierflow.errors import ConfigurationError
from barrierflow.protocol.key_group_range import key_group_range_for_subtask, subtask_for_key_group
from barrierflow.runtime.timer_service import TIMERS
from barrierflow.state.backends import StateBackendConfig
from barrierflow.state.backends.hashmap import HeapKeyedStateBackend
from barrierflow.state.key_groups import assign_to_key_group
from barrierflow.state_processor import OperatorTransformation
from barrierflow.state_processor.bootstrap import SubtaskWrite, decode_subtask, write_subtask
from barrierflow.state_processor.functions import KeyedStateBootstrapFunction

TOTAL = ValueStateDescriptor("total", Types.LONG())


class Totals(KeyedStateBootstrapFunction):
    def open(self, runtime_context):
        self.total = runtime_context.get_state(TOTAL)

    def process_element(self, row, ctx):
        self.total.update(row["amount"])
        ctx.timer_service().register_event_time_timer(row["amount"] + 1)


def rows_of(subtask: int, parallelism: int) -> list[dict]:
    return [
        {"user": k, "amount": 10 * k}
        for k in range(200)
        if subtask_for_key_group(128, parallelism, assign_to_key_group(k, 128)) == subtask
    ]


@pytest.mark.parametrize("backend", ["hashmap", "rocksdb"])
def test_a_subtasks_rows_become_its_canonical_snapshot(tmp_path, backend):
    path = str(tmp_path / "savepoint")
    write = SubtaskWrite(
        "totals", 2, 128, StateBackendConfig(kind=backend), path,
        file_systems.current_settings(), lambda row: row["user"], Totals(),
    )  # fmt: skip
    state = decode_subtask(write_subtask(write, 1, rows_of(1, 2)))
    (handle,) = state.keyed_state
    assert (state.subtask, handle.key_group_start, handle.key_group_end) == (1, 64, 127)
    assert handle.types == {"total": "LONG"} and handle.backend == backend
    assert set(handle.states) == {"total", TIMERS.name}
    restored = HeapKeyedStateBackend(128, key_group_range_for_subtask(128, 2, 1))
    restored.restore([handle], StorageRestoreStreams(CheckpointDirectory(path), False))
    totals = dict(restored.entries("total"))
    assert totals == {row["user"]: row["amount"] for row in rows_of(1, 2)}
    timers = dict(restored.entries(TIMERS.name))
    assert timers[rows_of(1, 2)[0]["user"]] == {(0, rows_of(1, 2)[0]["amount"] + 1, None): True}


def test_the_builder_takes_a_dataframe_a_key_selector_and_a_bootstrap_function():
    with pytest.raises(ConfigurationError, match="takes a Spark DataFrame"):
        OperatorTransformation.bootstrap_with([1, 2])

    class Frame:
        rdd = None

    keyed = OperatorTransformation.bootstrap_with(Frame()).key_by(lambda r: r, Types.LONG())
    with pytest.raises(ConfigurationError, match="needs a KeyedStateBootstrapFunction"):
        keyed.transform(object())
    assert keyed.transform(Totals()).key_type == Types.LONG()
