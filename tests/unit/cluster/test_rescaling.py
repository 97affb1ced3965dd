"""Rescaling a running job on threads (no Spark): 1 -> 2 -> 1 while it runs, from a checkpoint
taken for it, every record once in the committed output and each key's running sums
consistent; per-operator parallelism; and requests refused before anything stops, saying why."""

from __future__ import annotations

import time

import pytest

from barrierflow.client.submission_context import SubmissionContext, installed
from barrierflow.cluster.scaling.rescaler import RescaleRefused, RescaleStatus
from barrierflow.common import Configuration
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.file_system import FileSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.testing.thread_deployer import ThreadExecutor
from tests.jobs import odd_even

N = 6000


def start(tmp_path, parallelism: int = 1):
    conf = Configuration({"rest.port": -1})
    with installed(SubmissionContext(configuration=conf, executor=ThreadExecutor())):
        env = StreamExecutionEnvironment().set_parallelism(parallelism)
    odd_even.build(env, N, str(tmp_path / "out"), str(tmp_path / "ckpt"), interval_ms=100,
                   delay_s=0.001)  # fmt: skip
    return env.execute_async("rescaled")


def running(client) -> None:
    deadline = time.monotonic() + 30
    job_master = client._job_master
    while not (job_master._supervisor.current and job_master._supervisor.current.all_running):
        assert time.monotonic() < deadline, "the job did not run"
        time.sleep(0.05)


def test_a_running_job_rescaled_up_and_down_commits_every_record_once(tmp_path):
    client = start(tmp_path)
    running(client)
    up = client.rescale(2).result()
    assert up.status is RescaleStatus.COMPLETED
    assert set(up.from_parallelism.values()) == {1} and max(up.to_parallelism.values()) == 2
    assert up.checkpoint_id is not None and up.downtime_ms is not None
    running(client)
    down = client.rescale(1).result()
    assert set(down.to_parallelism.values()) == {1}
    result = client.get_job_execution_result().result()
    odd_even.check_exactly_once(odd_even.read_committed(str(tmp_path / "out")), N)
    assert result.attempts == 3  # two rescales, no failure
    history = client._job_master.status_view.snapshot().rescales
    assert [r.status for r in history] == [RescaleStatus.COMPLETED, RescaleStatus.COMPLETED]


def test_one_operator_rescaled_takes_its_chain_along(tmp_path):
    client = start(tmp_path, parallelism=1)
    running(client)
    record = client.rescale(per_operator={"running-sum": 2}).result()
    sums = [name for name in record.to_parallelism if "RunningSum" in name or "Process" in name]
    assert sums and all(record.to_parallelism[name] == 2 for name in sums)
    assert record.to_parallelism[next(n for n in record.to_parallelism if "numbers" in n)] == 1
    client.get_job_execution_result().result()
    odd_even.check_exactly_once(odd_even.read_committed(str(tmp_path / "out")), N)


@pytest.mark.parametrize(
    "parallelism, per_operator, reason",
    [
        (0, None, "parallelism must be a positive integer, got 0"),
        (17, None, "above the max parallelism 16"),
        (None, {"nope": 2}, "the job has no operator 'nope'"),
        (1, None, "the job already runs at that parallelism"),
    ],
)
def test_a_bad_request_is_refused_before_anything_stops(
    tmp_path, parallelism, per_operator, reason
):
    client = start(tmp_path)
    running(client)
    attempt = client._job_master._supervisor.current.number
    with pytest.raises(RescaleRefused, match=reason):
        client.rescale(parallelism, per_operator).result()
    assert client._job_master._supervisor.current.number == attempt  # nothing stopped
    assert client._job_master.status_view.snapshot().rescales[-1].status is RescaleStatus.REFUSED
    client.cancel().result()


def test_a_rescale_is_refused_while_another_is_in_progress(tmp_path):
    client = start(tmp_path)
    running(client)
    first = client.rescale(2)
    with pytest.raises(RescaleRefused, match="a rescale is in progress"):
        client.rescale(1).result()
    assert first.result().status is RescaleStatus.COMPLETED
    client.cancel().result()


def test_a_job_without_checkpointing_cannot_be_rescaled(tmp_path):
    conf = Configuration({"rest.port": -1})
    with installed(SubmissionContext(configuration=conf, executor=ThreadExecutor())):
        env = StreamExecutionEnvironment().set_parallelism(1)
    env.from_source(NumberSequenceSource(1, 10**6), "n").map(
        odd_even.Throttle(0.001, None)
    ).sink_to(FileSink(str(tmp_path / "out")))
    client = env.execute_async("no checkpoints")
    running(client)
    with pytest.raises(RescaleRefused, match="does not checkpoint"):
        client.rescale(2).result()
    client.cancel().result()
