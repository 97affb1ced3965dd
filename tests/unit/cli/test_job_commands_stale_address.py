"""``barrierflow cancel`` and ``savepoint`` against a job whose driver was killed outright: its
address file is left behind, and nobody answers at the endpoint it names. The command must say
so within seconds, not wait its whole timeout for nobody (campaign seed 1005: a cancel with a
savepoint right after the driver was killed hung past the campaign's two minutes)."""

from __future__ import annotations

import json
import socket

import pytest
from typer.testing import CliRunner

from barrierflow.checkpoint import storage_layout as layout
from barrierflow.checkpoint.storage import CheckpointDirectory, job_root_uri
from barrierflow.cli import app
from barrierflow.cluster import job_master_client

JOB = "5eed1005"


def _unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stale_address(tmp_path) -> None:
    storage = CheckpointDirectory(job_root_uri(str(tmp_path), JOB))
    storage.check_writable()
    address = {
        "job_id": JOB,
        "job_name": "killed-driver",
        "endpoint": f"tcp://127.0.0.1:{_unused_port()}",
        "secret": "0" * 32,
        "pid": 1,
        "rest_url": None,
    }
    storage.write_small_file(layout.JOBMASTER_ADDRESS_FILE, json.dumps(address).encode())


@pytest.mark.timeout(30)  # without the ping first, the savepoint request waits 900 s
@pytest.mark.parametrize(
    "command",
    [["cancel", JOB, "-s", "SAVEPOINTS"], ["savepoint", JOB, "SAVEPOINTS"]],
    ids=["cancel-with-savepoint", "savepoint"],
)
def test_seed_1005_a_left_behind_address_is_named_not_waited_on(tmp_path, monkeypatch, command):
    monkeypatch.setattr(job_master_client, "PING_TIMEOUT_S", 0.3)
    _stale_address(tmp_path)
    args = [str(tmp_path / "sp") if a == "SAVEPOINTS" else a for a in command]
    result = CliRunner().invoke(app, [*args, "--checkpoint-dir", str(tmp_path)])
    assert result.exit_code != 0
    assert f"Job {JOB} (killed-driver) does not answer" in result.output
    assert f"--resume {JOB}" in result.output
