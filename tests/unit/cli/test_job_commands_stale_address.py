"""``barrierflow cancel`` and ``savepoint`` against a job whose driver was killed outright: its
address file is left behind, and nobody answers at the endpoint it names. The command must say
so within seconds, not wait its whole timeout for nobody (campaign seed 1005: a cancel with a
savepoint right after the driver was killed hung past the campaign's two minutes)."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest
import zmq
from typer.testing import CliRunner

from barrierflow.checkpoint import storage_layout as layout
from barrierflow.checkpoint.storage import CheckpointDirectory, job_root_uri
from barrierflow.cli import app
from barrierflow.cluster import job_master_client
from barrierflow.control import messages as msg

JOB = "5eed1005"


def _unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stale_address(tmp_path, endpoint: str | None = None) -> None:
    storage = CheckpointDirectory(job_root_uri(str(tmp_path), JOB))
    storage.check_writable()
    address = {
        "job_id": JOB,
        "job_name": "killed-driver",
        "endpoint": endpoint or f"tcp://127.0.0.1:{_unused_port()}",
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


class _JobMasterThatEnds:
    """Answers pings, takes any other request without replying, and ends ``after_s`` later:
    a job that finished while a rescale it was asked for was pending (campaign seed 36100)."""

    def __init__(self, after_s: float) -> None:
        self.context = zmq.Context()
        self.router = self.context.socket(zmq.ROUTER)
        port = self.router.bind_to_random_port("tcp://127.0.0.1")
        self.endpoint = f"tcp://127.0.0.1:{port}"
        self.after_s = after_s
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        ends = time.monotonic() + self.after_s
        while time.monotonic() < ends:
            if self.router.poll(50):
                identity, data = self.router.recv_multipart()
                if isinstance(msg.decode(data), msg.PingJob):
                    self.router.send_multipart((identity, msg.encode(msg.PingJobReply(0, JOB))))
        self.router.close(linger=0)
        self.context.term()


@pytest.mark.timeout(30)  # without pings while it waits, the rescale waits its --wait-s (600 s)
def test_seed_36100_a_job_that_ends_while_its_rescale_is_pending_is_named(tmp_path, monkeypatch):
    monkeypatch.setattr(job_master_client, "PING_TIMEOUT_S", 0.3)
    monkeypatch.setattr(job_master_client, "PING_EVERY_S", 0.2)
    job_master = _JobMasterThatEnds(after_s=1.0)
    _stale_address(tmp_path, job_master.endpoint)

    result = CliRunner().invoke(app, ["rescale", JOB, "-p", "2", "--checkpoint-dir", str(tmp_path)])

    assert result.exit_code != 0
    assert f"The JobMaster of job {JOB} at {job_master.endpoint} stopped answering" in (
        result.output
    )
