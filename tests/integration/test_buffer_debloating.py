"""Buffer debloating on Spark: under real back-pressure (a slow stage behind a keyed shuffle),
with ``taskmanager.network.memory.buffer-debloat.enabled``, the slow stage's subtasks ask their
producer for buffers smaller than the configured 1,024 records (Flink's ``debloatedBufferSize``
gauge, read from ``/metrics`` while the job runs: without debloating it stays at 1,024), aligned
checkpoints complete while the job runs, a kill after one of them restores from it, and the
output holds every record exactly once. Shown by what the job wrote, what its checkpoints say and
what its gauge said, not by durations."""

from __future__ import annotations

import json
import os
import time
import urllib.error
from collections import defaultdict

import pytest
from prometheus_client.parser import text_string_to_metric_families

from barrierflow.checkpoint import storage_layout as layout
from barrierflow.checkpoint.history import CheckpointStatus
from barrierflow.checkpoint.storage import CheckpointDirectory, job_root_uri
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.protocol.checkpoint_barrier import CheckpointKind
from tests.jobs import backpressured
from tests.jobs.odd_even import read_committed
from tests.unit.cluster.test_job_master_rest import request

pytestmark = pytest.mark.spark

N = 30_000
BUFFER = 1024  # records: the configured buffer size (pipeline's default)
DEBLOATED = {
    "taskmanager.network.memory.buffer-debloat.enabled": True,
    "taskmanager.network.memory.buffer-debloat.target": "200 ms",
    "taskmanager.network.memory.buffer-debloat.period": "50 ms",
}
GAUGE = "barrierflow_taskmanager_job_task_debloatedBufferSize"


def debloated_sizes_while_it_runs(client, checkpoint_dir: str) -> dict[str, list[float]]:
    """Per vertex, every ``debloatedBufferSize`` of its subtasks that ``/metrics`` served,
    scraped until the job ended (the heartbeats bring new values every 0.5 s)."""
    storage = CheckpointDirectory(job_root_uri(checkpoint_dir, client.get_job_id()))
    url = None
    seen: dict[str, list[float]] = defaultdict(list)
    while not client.done():
        time.sleep(0.1)
        if url is None:
            address = storage.read_small_file(layout.JOBMASTER_ADDRESS_FILE)
            url = json.loads(address)["rest_url"] if address else None
            continue
        try:
            status, text = request(f"{url}/metrics")
        except (urllib.error.URLError, OSError):
            continue  # the job ended meanwhile
        if status != 200:
            continue
        for family in text_string_to_metric_families(text):
            if family.name == GAUGE:
                for sample in family.samples:
                    seen[sample.labels["task_id"]].append(sample.value)
    return seen


def test_a_slow_consumer_asks_for_smaller_buffers_and_aligned_checkpoints_restore_exactly_once(
    spark, tmp_path
):
    ckpt, marker = str(tmp_path / "ckpt"), str(tmp_path / "killed")
    env = StreamExecutionEnvironment().set_spark_session(spark).set_parallelism(2)
    kill = backpressured.Kill(N // 3, marker, ckpt, data_in_flight=False)
    backpressured.build(
        env, N, str(tmp_path / "out"), ckpt, str(tmp_path / "logs"),
        {**DEBLOATED, "rest.port": 0}, kill, interval_ms=200,
    )  # fmt: skip
    client = env.execute_async("debloated")
    sizes = debloated_sizes_while_it_runs(client, ckpt)
    result = client.get_job_execution_result().result(300)

    # v0: the source chain (no input gate, no gauge); v1: the keyed count and the slow stage
    assert set(sizes) == {"v1"}, f"the gauge was served for {sorted(sizes)}"
    assert min(sizes["v1"]) < BUFFER, f"the slow stage never asked for less: {set(sizes['v1'])}"
    assert max(sizes["v1"]) <= BUFFER

    assert os.path.exists(marker), "the kill never fired: no checkpoint completed mid-stream"
    assert result.attempts == 2
    periodic = [
        r
        for r in result.checkpoint_history
        if r.kind is CheckpointKind.CHECKPOINT and r.status is CheckpointStatus.COMPLETED
    ]
    assert periodic, "no periodic checkpoint completed"
    assert not any(r.unaligned or r.persisted_data for r in periodic)  # aligned, all of them

    records = read_committed(str(tmp_path / "out"))  # [key, value, count of the key so far]
    assert sorted(value for _, value, _ in records) == list(range(1, N + 1))
    counts = defaultdict(list)
    for key, value, count in records:
        assert key == value % backpressured.KEYS
        counts[key].append((value, count))
    for key, seen in counts.items():  # one source subtask: each key's values in order
        assert [count for _, count in sorted(seen)] == list(range(1, len(seen) + 1)), key
