"""The autoscaler at work on threads (no Spark): a job whose throttled source cannot keep up
with its backlog is scaled up by the autoscaler, from a checkpoint, the decision and its reason
in the rescale history, and every record committed once; its decisions not to scale are kept
too, one record for a run of them; what contradicts is refused before the job starts."""

from __future__ import annotations

import time

import pytest

from barrierflow.client.submission_context import SubmissionContext, installed
from barrierflow.cluster.scaling.rescaler import RescaleStatus
from barrierflow.common import Configuration
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.errors import ConfigurationError
from barrierflow.testing.thread_deployer import ThreadExecutor
from tests.jobs import odd_even

N = 12000
FAST = {
    "rest.port": -1,
    "job.autoscaler.enabled": True,
    "job.autoscaler.metrics.window": "3 s",
    "job.autoscaler.stabilization.interval": "2 s",
    "job.autoscaler.catch-up.duration": "10 s",
}


def start(tmp_path, conf: dict, checkpoints: bool = True):
    context = SubmissionContext(configuration=Configuration(conf), executor=ThreadExecutor())
    with installed(context):
        env = StreamExecutionEnvironment().set_parallelism(1)
    odd_even.build(env, N, str(tmp_path / "out"), str(tmp_path / "ckpt") if checkpoints else None,
                   interval_ms=200, delay_s=0.001)  # fmt: skip
    return env.execute_async("autoscaled")


def test_a_source_behind_its_backlog_is_scaled_up_and_every_record_committed_once(tmp_path):
    client = start(tmp_path, FAST)
    client.get_job_execution_result().result()
    odd_even.check_exactly_once(odd_even.read_committed(str(tmp_path / "out")), N)
    history = client._job_master.status_view.snapshot().rescales
    scaled = [
        r for r in history if r.trigger == "autoscaler" and r.status is not RescaleStatus.SKIPPED
    ]
    assert scaled, history
    first = scaled[0]
    assert first.status is RescaleStatus.COMPLETED, first
    assert max(first.to_parallelism.values()) > 1
    assert "unread records" in first.reason and "scaled " in first.reason, first.reason


def test_decisions_not_to_scale_are_one_record_for_a_run_of_them(tmp_path):
    calm = {**FAST, "job.autoscaler.target.utilization": 0.5,
            "job.autoscaler.target.utilization.boundary": 0.49}  # fmt: skip
    client = start(tmp_path, {**calm, "job.autoscaler.vertex.max-parallelism": 1})
    deadline = time.monotonic() + 60
    while True:
        history = client._job_master.status_view.snapshot().rescales
        skipped = [r for r in history if r.status is RescaleStatus.SKIPPED]
        if skipped and skipped[-1].decisions >= 3:
            break
        assert time.monotonic() < deadline, history
        time.sleep(0.2)
    client.cancel().result()
    assert len(skipped) == 1 and "stays at 1" in skipped[0].reason, skipped


@pytest.mark.parametrize(
    "conf, error",
    [
        ({**FAST, "job.autoscaler.target.utilization.boundary": 0.8},
         "job.autoscaler.target.utilization.boundary and job.autoscaler.target.utilization"),
        ({**FAST, "scheduler-mode": "reactive"}, "choose one"),
    ],
)  # fmt: skip
def test_settings_that_contradict_are_refused_before_the_job_starts(tmp_path, conf, error):
    with pytest.raises(ConfigurationError, match=error):
        start(tmp_path, conf)


def test_the_autoscaler_without_checkpoints_is_refused(tmp_path):
    with pytest.raises(ConfigurationError, match="enable checkpointing"):
        start(tmp_path, FAST, checkpoints=False)
