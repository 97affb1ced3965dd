"""A typed state evolved through a savepoint by real jobs on local Spark, in both backends: the
dry run prints what becomes of the state and exits 0 for an allowed change, 1 for a refused one;
the evolved job restores the migrated values; the refused one fails naming the operator, the
state and the field."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from barrierflow.cli import app
from barrierflow.common.job_client import SavepointFormatType
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.errors import JobExecutionError
from tests.jobs.keyed_counts import profiles_job
from tests.jobs.odd_even import read_committed

pytestmark = pytest.mark.spark

JOB_FILE = "tests/jobs/keyed_counts.py"


def stopped_v1(spark, root: Path, backend: str, format_type: SavepointFormatType) -> str:
    env = StreamExecutionEnvironment().set_spark_session(spark).set_parallelism(2)
    profiles_job(env, 1, 8, str(root / "out1"), str(root / "ckpt"), backend)
    client = env.execute_async("profiles v1")
    deadline = time.monotonic() + 90
    while len(read_committed(str(root / "out1"))) < 8:
        assert time.monotonic() < deadline, "the first job did not commit its output"
        time.sleep(0.1)
    return client.stop_with_savepoint(False, str(root / "sp"), format_type=format_type).result()


def dry_run(path: str, version: int):
    """Of a later version, whose first job's source state is left behind (-n)."""
    return CliRunner().invoke(
        app,
        ["run", JOB_FILE, "-s", path, "-n", "--dry-run"],
        env={"BARRIERFLOW_TEST_PROFILE_VERSION": str(version)},
    )


@pytest.mark.parametrize(
    ("backend", "format_type"),
    [("hashmap", SavepointFormatType.CANONICAL), ("rocksdb", SavepointFormatType.NATIVE)],
)
def test_a_profile_state_evolves_through_a_savepoint_and_a_rename_is_refused(
    spark, tmp_path, backend, format_type
):
    path = stopped_v1(spark, tmp_path, backend, format_type)

    allowed = dry_run(path, 2)
    assert allowed.exit_code == 0, allowed.output
    assert (
        "state 'profile': will migrate: field 'name' removed; field 'country' added (default "
        "'fr'); field 'note' added (default None); fields of the value reordered; field "
        "'id' widens from INT to LONG; field 'visits' widens from INT to LONG"
    ) in " ".join(allowed.output.split())
    refused = dry_run(path, 3)
    assert refused.exit_code == 1
    assert "state 'profile': incompatible: field 'name' is gone and field 'title'" in " ".join(
        refused.output.split()
    )

    env = StreamExecutionEnvironment().set_spark_session(spark).set_parallelism(3)
    profiles_job(env, 2, 4, str(tmp_path / "out2"), str(tmp_path / "ckpt2"), backend, idle=False)
    env.set_restore_path(path)
    env.configure({"execution.state-recovery.ignore-unclaimed-state": True})
    env.execute("profiles v2")
    assert sorted(read_committed(str(tmp_path / "out2")), key=lambda p: p["id"]) == [
        {"visits": 3, "id": k, "country": "fr", "note": None} for k in range(4)
    ]

    env = StreamExecutionEnvironment().set_spark_session(spark).set_parallelism(2)
    profiles_job(env, 3, 4, str(tmp_path / "out3"), str(tmp_path / "ckpt3"), backend, idle=False)
    env.set_restore_path(path)
    env.configure({"execution.state-recovery.ignore-unclaimed-state": True})
    with pytest.raises(JobExecutionError) as failed:
        env.execute("profiles v3")
    message = " ".join(str(failed.value).split())
    assert "operator 'profiles' (Profiles), subtask" in message
    assert "state 'profile' cannot be restored: field 'name' is gone and field 'title'" in message
