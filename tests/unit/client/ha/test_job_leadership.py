"""A job under high availability, submitted on threads (no Spark): its settings checked before
anything runs, the job recorded under its cluster id, the same program run again going on with
that job (taking over its checkpoints, ids past what the last leader reserved), a finished job
not run again, and other programs refused naming both."""

from __future__ import annotations

import json

import pytest

from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.client.ha.ha_files import ha_files
from barrierflow.client.ha.job_leadership import JobEndedError, ha_settings
from barrierflow.client.ha.leader_election import LeaderElection
from barrierflow.client.ha.lease import Holder
from barrierflow.client.submission_context import SubmissionContext, installed
from barrierflow.common import Configuration
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.file_system import FileSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.errors import ConfigurationError, StorageConfigError
from barrierflow.testing.thread_deployer import ThreadExecutor
from tests.jobs.odd_even import read_committed


def ha(tmp_path, **more) -> dict:
    return {
        "high-availability.type": "filesystem",
        "high-availability.storageDir": str(tmp_path / "ha"),
        "high-availability.cluster-id": "counts",
        "high-availability.filesystem.lease-duration": "1 s",
        "rest.port": -1,
        **more,
    }


def program(tmp_path, conf: dict, name: str = "counts", uid: str = "sink"):
    with installed(SubmissionContext(configuration=Configuration(conf), executor=ThreadExecutor())):
        env = StreamExecutionEnvironment().set_parallelism(2)
    env.enable_checkpointing(50)
    env.get_checkpoint_config().set_checkpoint_storage(str(tmp_path / "ckpt"))
    env.from_source(NumberSequenceSource(1, 300), "numbers").map(lambda x: [x]).sink_to(
        FileSink(str(tmp_path / "out"))
    ).uid(uid)
    return env, name


def job_record(tmp_path) -> dict:
    return json.loads((tmp_path / "ha" / "counts" / "job.json").read_text())


def test_high_availability_is_off_unless_configured():
    assert ha_settings(Configuration(), "job") is None


def test_a_storage_dir_is_required_and_a_cluster_id_defaults_to_the_job_name(tmp_path):
    with pytest.raises(ConfigurationError, match=r"high-availability.storageDir is not set"):
        ha_settings(Configuration({"high-availability.type": "filesystem"}), "job")
    settings = ha_settings(
        Configuration(
            {"high-availability.type": "filesystem", "high-availability.storageDir": "x"}
        ),
        "odd / even sums",
    )
    assert (settings.cluster_id, settings.lease_duration_s) == ("odd-even-sums", 10.0)
    with pytest.raises(ConfigurationError, match=r"high-availability.cluster-id 'a/b'"):
        ha_settings(Configuration(ha(tmp_path, **{"high-availability.cluster-id": "a/b"})), "j")


def test_bad_high_availability_keys_and_values_are_refused_naming_them():
    with pytest.raises(ConfigurationError, match=r"did you mean high-availability.storageDir"):
        Configuration({"high-availability.storagedir": "/tmp/ha"})
    with pytest.raises(ConfigurationError, match=r"high-availability.type.*zookeeper"):
        Configuration({"high-availability.type": "zookeeper"})
    with pytest.raises(ConfigurationError, match=r"lease-duration"):
        Configuration({"high-availability.filesystem.lease-duration": "10 ms"})


def test_a_storage_dir_that_cannot_be_written_is_refused_before_the_job_runs(tmp_path):
    (tmp_path / "file").write_text("not a directory")
    conf = ha(tmp_path, **{"high-availability.storageDir": str(tmp_path / "file" / "ha")})
    env, name = program(tmp_path, conf)
    with pytest.raises(StorageConfigError, match=r"high-availability.storageDir: cannot write"):
        env.execute(name)


def test_the_same_program_run_again_goes_on_with_the_job_of_its_cluster_id(tmp_path):
    conf = ha(tmp_path)
    env, name = program(tmp_path, conf)
    first = env.execute(name)
    record = job_record(tmp_path)
    assert (record["job_id"], record["state"], record["epoch"]) == (first.job_id, "FINISHED", 1)
    assert record["operator_uids"] == ["sink"]
    assert sorted(r[0] for r in read_committed(str(tmp_path / "out"))) == list(range(1, 301))
    lease = json.loads(next((tmp_path / "ha" / "counts" / "leader").iterdir()).read_text())
    assert lease["released"] and lease["reserved_checkpoint_ids"] > max(first.checkpoint_ids)

    env, name = program(tmp_path, conf)
    with pytest.raises(JobEndedError, match=r"already ended, FINISHED"):
        env.execute(name)  # a finished job is not run again under its cluster id


def test_a_job_still_running_is_taken_over_with_ids_past_the_last_reservation(tmp_path):
    conf = ha(tmp_path)
    env, name = program(tmp_path, conf)
    first = env.execute(name)
    # as if its driver had died: the job is still RUNNING in the record
    path = tmp_path / "ha" / "counts" / "job.json"
    path.write_text(json.dumps({**job_record(tmp_path), "state": "RUNNING"}))

    env, name = program(tmp_path, conf)
    second = env.execute(name)

    assert second.job_id == first.job_id
    assert min(second.checkpoint_ids) >= 101  # epoch 1 reserved ids 1-100
    storage = CheckpointDirectory(str(tmp_path / "ckpt" / first.job_id))
    assert {r.leader_epoch for r in storage.read_history().records} == {1, 2}
    assert job_record(tmp_path)["epoch"] == 2


def test_another_program_under_the_cluster_id_is_refused_naming_both(tmp_path):
    conf = ha(tmp_path)
    env, name = program(tmp_path, conf)
    env.execute(name)
    path = tmp_path / "ha" / "counts" / "job.json"
    path.write_text(json.dumps({**job_record(tmp_path), "state": "RUNNING"}))

    env, _ = program(tmp_path, conf)
    with pytest.raises(
        ConfigurationError, match=r"runs job 'counts'.*this program's job is 'other'"
    ):
        env.execute("other")
    env, name = program(tmp_path, conf, uid="renamed-sink")
    with pytest.raises(ConfigurationError, match=r"cannot restore from .*chk-\d+/_metadata.*sink"):
        env.execute(name)


class PreparingExecutor(ThreadExecutor):
    """An executor that gets ready while its program waits as a standby (as Spark's creates
    its SparkContext on a local master)."""

    def __init__(self) -> None:
        super().__init__()
        self.prepared: list[int] = []

    def prepare_while_standby(self, num_slots: int) -> None:
        self.prepared.append(num_slots)


def preparing_program(tmp_path, executor: PreparingExecutor):
    context = SubmissionContext(configuration=Configuration(ha(tmp_path)), executor=executor)
    with installed(context):
        env = StreamExecutionEnvironment().set_parallelism(2)
    env.enable_checkpointing(50)
    env.get_checkpoint_config().set_checkpoint_storage(str(tmp_path / "ckpt"))
    env.from_source(NumberSequenceSource(1, 300), "numbers").map(lambda x: [x]).sink_to(
        FileSink(str(tmp_path / "out"))
    ).uid("sink")
    return env


def test_a_standby_gets_its_executor_ready_once_while_it_waits_and_a_leader_does_not(tmp_path):
    # epoch 1 held by a driver on another host that never renews: a standby waits 1 s
    held = LeaderElection(
        ha_files(str(tmp_path / "ha"), "counts"), 1.0, Holder("elsewhere", 1, 0, "a")
    )
    assert held.acquire() == 1
    standby = PreparingExecutor()
    preparing_program(tmp_path, standby).execute("counts")
    assert standby.prepared == [2]  # once, for the job's slots (its highest parallelism)
    assert job_record(tmp_path)["epoch"] == 2

    leader = PreparingExecutor()  # the lease is free now: it leads at once
    with pytest.raises(JobEndedError):
        preparing_program(tmp_path, leader).execute("counts")
    assert leader.prepared == []
