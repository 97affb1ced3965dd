"""Incremental RocksDB checkpoints of whole jobs on Spark: shared files, their cleanup, and what
the command line shows of them."""

from __future__ import annotations

import json
import os

import cloudpickle
import pytest
from typer.testing import CliRunner

from barrierflow.checkpoint.metadata import IncrementalKeyedHandle
from barrierflow.checkpoint.storage import CheckpointDirectory, job_root_uri
from barrierflow.cli import app
from barrierflow.common import RestartStrategies
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.functions.one_input import KeyedProcessFunction
from barrierflow.datastream.state import ValueStateDescriptor
from tests.jobs.odd_even import Throttle

pytestmark = pytest.mark.spark


class CountPerKey(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element(self, value, ctx):
        self.count.update((self.count.value() or 0) + 1)
        return None


cloudpickle.register_pickle_by_value(__import__(__name__, fromlist=["_"]))


def test_after_many_checkpoints_with_compaction_shared_holds_only_retained_files(spark, tmp_path):
    env = StreamExecutionEnvironment().set_parallelism(2)
    env.configure(
        {
            "state.backend.type": "rocksdb",
            "execution.checkpointing.incremental": True,
            # small memtables: a flush, so a new SST file, at nearly every checkpoint, and
            # compactions that merge them
            "state.backend.rocksdb.writebuffer.size": "64kb",
            "taskmanager.state.local.root-dirs": str(tmp_path / "local"),
        }
    )
    env.enable_checkpointing(50)
    env.get_checkpoint_config().set_checkpoint_storage(str(tmp_path / "ckpt"))
    env.get_checkpoint_config().set_num_retained_checkpoints(2)
    env.set_restart_strategy(RestartStrategies.no_restart())
    (
        env.from_source(NumberSequenceSource(1, 60_000), "numbers")
        .map(Throttle(0.0001, None))
        .key_by(lambda x: x % 20_000)
        .process(CountPerKey())
        .uid("count")
        .sink_to(DiscardingSink())
    )

    result = env.execute("incremental")

    assert result.num_completed_checkpoints >= 15
    storage = CheckpointDirectory(job_root_uri(str(tmp_path / "ckpt"), result.job_id))
    retained = [storage.read_metadata(cid) for cid in result.checkpoint_ids]
    referenced = set().union(*(m.shared_paths() for m in retained))
    assert set(storage.list_shared()) == referenced
    handles = [
        h
        for m in retained
        for op in m.operators
        for s in op.subtasks
        for h in s.keyed_state
        if isinstance(h, IncrementalKeyedHandle)
    ]
    assert len(handles) == 2 * len(retained)
    # Files were reused across checkpoints, and compaction replaced some: the first
    # checkpoints' uploads are gone.
    last = retained[-1]
    assert any(s.checkpoint_id < last.checkpoint_id for h in handles for s in h.shared)
    first_completed = result.checkpoint_history[0].checkpoint_id
    assert not [p for p in storage.list_shared() if f"/{first_completed}-" in p]
    records = [r for r in result.checkpoint_history if r.checkpointed_size]
    assert any(r.checkpointed_size < r.state_size for r in records)

    shown = CliRunner().invoke(
        app, ["checkpoints", "show", str(tmp_path / "ckpt"), str(last.checkpoint_id), "--json"]
    )
    assert shown.exit_code == 0, shown.output
    doc = json.loads(shown.output)
    keyed = [
        h for op in doc["metadata"]["operators"] for s in op["subtasks"] for h in s["keyed_state"]
    ]
    assert {h["type"] for h in keyed} == {"incremental"}
    files = [f for h in keyed for f in h["shared"]]
    assert files and all(f["file"]["size"] > 0 and f["local_name"].endswith(".sst") for f in files)
    assert {f["file"]["path"] for f in files} == last.shared_paths()
    assert not os.path.exists(tmp_path / "local" / "barrierflow" / result.job_id)
