"""Reactive mode on threads (no Spark), with a "cluster" whose slots the test changes: the job
starts on the slots offered whatever the program's parallelism, scales up once more slots held
for the stabilization time, and after a failure with fewer slots goes on at what is left; each
change is in the rescale history, a rescale asked by hand is refused, and every record is
committed once through it all."""

from __future__ import annotations

import time

import pytest

from barrierflow.client.submission_context import SubmissionContext, installed
from barrierflow.cluster.scaling.rescaler import RescaleRefused, RescaleStatus
from barrierflow.common import Configuration
from barrierflow.datastream import DataStreamUtils, StreamExecutionEnvironment
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.errors import ConfigurationError
from barrierflow.testing.thread_deployer import ThreadExecutor
from tests.jobs import odd_even

N = 8000
REACTIVE = {
    "rest.port": -1,
    "scheduler-mode": "reactive",
    "jobmanager.adaptive-scheduler.resource-stabilization-timeout": "300 ms",
}


def start(tmp_path, executor: ThreadExecutor, conf: dict = REACTIVE, checkpoints: bool = True):
    with installed(SubmissionContext(configuration=Configuration(conf), executor=executor)):
        env = StreamExecutionEnvironment().set_parallelism(3)
    odd_even.build(env, N, str(tmp_path / "out"), str(tmp_path / "ckpt") if checkpoints else None,
                   interval_ms=100, delay_s=0.001)  # fmt: skip
    return env.execute_async("reactive")


def wait_for(condition, what: str, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def running_at(client, slots: int) -> bool:
    job_master = client._job_master
    current = job_master._supervisor.current
    return current is not None and current.all_running and job_master.plan.graph.num_slots == slots


def test_the_job_follows_the_slots_the_cluster_offers_and_commits_every_record_once(tmp_path):
    executor = ThreadExecutor(slots=1)
    client = start(tmp_path, executor)
    wait_for(lambda: running_at(client, 1), "the job did not start on the one slot offered")
    with pytest.raises(RescaleRefused, match="reactive mode"):
        client.rescale(2).result()

    executor.slots = 2  # an executor joins
    wait_for(lambda: running_at(client, 2), "the job did not scale up to 2")
    wait_for(lambda: not client._job_master._rescaler.in_progress, "the rescale did not end")

    executor.slots = 1  # one leaves, and the task it ran fails
    client._job_master._supervisor.fail("executor lost (the test's)")
    wait_for(lambda: running_at(client, 1), "the job did not go on at 1")

    client.get_job_execution_result().result()
    odd_even.check_exactly_once(odd_even.read_committed(str(tmp_path / "out")), N)
    history = client._job_master.status_view.snapshot().rescales
    reactive = [r for r in history if r.trigger == "reactive"]
    assert [r.status for r in reactive] == [RescaleStatus.COMPLETED] * 2, reactive
    up, down = reactive
    assert max(up.to_parallelism.values()) == 2 and "2 task slots offered" in up.reason
    assert max(down.to_parallelism.values()) == 1 and "after the failure" in down.reason
    assert down.downtime_ms is not None and down.checkpoint_id is not None


def test_a_job_waits_for_a_slot_when_the_cluster_offers_none(tmp_path):
    executor = ThreadExecutor(slots=0)
    client = start(tmp_path, executor)
    time.sleep(1.5)
    assert client._job_master._supervisor.current is None  # no attempt without a slot
    executor.slots = 2
    wait_for(lambda: running_at(client, 2), "the job did not start once slots came")
    client.cancel().result()


def test_reactive_mode_without_checkpoints_is_refused_before_the_job_starts(tmp_path):
    with pytest.raises(ConfigurationError, match="enable checkpointing"):
        start(tmp_path, ThreadExecutor(slots=1), checkpoints=False)


@pytest.mark.parametrize(
    "key, value, error",
    [
        ("scheduler-mode", "elastic", "one of default, reactive"),
        ("jobmanager.adaptive-scheduler.resource-stabilization-timeout", "soon", "duration"),
    ],
)
def test_bad_reactive_settings_are_refused_naming_the_key(tmp_path, key, value, error):
    with pytest.raises(ConfigurationError, match=key.replace(".", r"\.")) as refused:
        start(tmp_path, ThreadExecutor(slots=1), {**REACTIVE, key: value})
    assert error in str(refused.value)


def test_reactive_mode_refuses_a_job_reading_a_source_reinterpreted_as_keyed(tmp_path):
    with installed(SubmissionContext(configuration=Configuration(REACTIVE),
                                     executor=ThreadExecutor(slots=1))):  # fmt: skip
        env = StreamExecutionEnvironment().set_parallelism(2)
    env.enable_checkpointing(100)
    env.get_checkpoint_config().set_checkpoint_storage(str(tmp_path / "ckpt"))
    pairs = env.from_source(NumberSequenceSource(1, 10), "numbers").map(lambda v: (v % 2, v))
    keyed = DataStreamUtils.reinterpret_as_keyed_stream(pairs, lambda r: r[0])
    keyed.reduce(lambda a, b: b).sink_to(DiscardingSink())
    with pytest.raises(ConfigurationError, match="scheduler-mode: reactive") as refused:
        env.execute_async("reactive, reinterpreted")
    assert "reinterpreted as keyed" in str(refused.value)
    assert "parallelism 2" in str(refused.value)
