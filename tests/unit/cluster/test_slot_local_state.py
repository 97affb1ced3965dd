"""What slots leave on their machine's disk when a job ends for good, without Spark: the real
JobMaster and slots (on threads, ``ThreadDeployer``) run the odd/even job with RocksDB
incremental checkpoints and local recovery, as on a cluster, where the JobMaster cannot reach
the executors' disks: once the job is canceled, or fails with no restart left, the slots have
removed their local recovery copies and the job's local directory."""

from __future__ import annotations

import os
import threading

from barrierflow.client.planning import plan_job
from barrierflow.cluster.job_master import JobMaster
from barrierflow.cluster.job_plan import NO_REST_SERVER
from barrierflow.common import RestartStrategies
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.errors import JobCanceledError, JobExecutionError
from barrierflow.state.backends import local_job_dir
from barrierflow.testing.thread_deployer import ThreadDeployer
from tests.jobs import odd_even
from tests.unit.cluster.test_job_master_fencing import wait_for


def cluster_job(tmp_path, fault: odd_even.Fault | None = None) -> JobMaster:
    env = StreamExecutionEnvironment().set_parallelism(2)
    conf = {
        "execution.checkpointing.incremental": True,
        "execution.state-recovery.from-local": True,
        "taskmanager.state.local.root-dirs": str(tmp_path / "local"),
    }
    checkpoints = str(tmp_path / "checkpoints")
    odd_even.build(
        env, 1_000_000, str(tmp_path / "out"), checkpoints, interval_ms=50, delay_s=0.0005,
        fault=fault, state_backend="rocksdb", conf=conf,
    )  # fmt: skip
    env.set_restart_strategy(RestartStrategies.no_restart())
    plan = plan_job(env._pipeline("local-state"))
    plan.rest = NO_REST_SERVER
    plan.slot_bind_host = None  # as on a cluster: the JobMaster leaves the slots' disks alone
    return JobMaster(plan, ThreadDeployer())


def local_copies(job_master: JobMaster) -> list[str]:
    root = os.path.join(
        local_job_dir(job_master.plan.task_config.state_backend, job_master.plan.job_id),
        "local-recovery",
    )
    return os.listdir(root) if os.path.isdir(root) else []


def run(job_master: JobMaster) -> list[BaseException]:
    outcome: list[BaseException] = []

    def target() -> None:
        try:
            job_master.run()
        except BaseException as e:  # noqa: BLE001 - the test inspects it
            outcome.append(e)

    threading.Thread(target=target, daemon=True).start()
    return outcome


def test_slots_of_a_canceled_job_remove_its_local_state(tmp_path):
    job_master = cluster_job(tmp_path)
    outcome = run(job_master)
    assert wait_for(lambda: local_copies(job_master), timeout_s=30)  # local recovery in use
    job_master.cancel()
    wait_for(lambda: outcome, timeout_s=30)
    assert isinstance(outcome[0], JobCanceledError)
    job_dir = local_job_dir(job_master.plan.task_config.state_backend, job_master.plan.job_id)
    assert not os.path.exists(job_dir), os.listdir(job_dir)


def test_slots_of_a_job_that_failed_for_good_remove_its_local_state(tmp_path):
    fault = odd_even.Fault("raise", 2_000, str(tmp_path / "fired"), str(tmp_path / "checkpoints"))
    job_master = cluster_job(tmp_path, fault)
    outcome = run(job_master)
    wait_for(lambda: outcome, timeout_s=60)
    assert isinstance(outcome[0], JobExecutionError), outcome
    assert os.path.exists(fault.marker)
    job_dir = local_job_dir(job_master.plan.task_config.state_backend, job_master.plan.job_id)
    assert not os.path.exists(job_dir), os.listdir(job_dir)
