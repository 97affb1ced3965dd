"""A real S3-protocol server for tests: the ``moto[server]`` package's ``moto_server`` on a free
localhost port, with authentication on (so that wrong credentials are refused, as AWS does).

Its first three requests may be unauthenticated: they create an IAM user allowed ``s3:*`` and
its access key, which the tests then use. Everything lives in the server's memory; it is
stopped (its whole process group) at the end of the test session.

It can be restarted (the fault campaign does) as a durable server would be: clients reach it
through a TCP forwarder (``tcp_proxy.py``) on a fixed port; the server records every request
(moto's recorder) and starts with a fixed random seed, so that a new server, given the old
ones' requests again before the forwarder lets clients in, holds the same users, keys and
objects.
"""

from __future__ import annotations

import base64
import contextlib
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tests.servers.tcp_proxy import TcpProxy

REGION = "us-east-1"
_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_SEED = 20240611  # the same ids and keys in every server generation


class MotoProcess:
    """The moto server behind the forwarder, generation after generation: each records the
    requests it serves into a file of its own, and a new one first replays all of them."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.generation = 0
        self.proxy: TcpProxy | None = None
        self._server: subprocess.Popen | None = None

    def _recording(self, generation: int) -> str:
        return os.path.join(self.root, f"recording-{generation}.jsonl")

    def start(self) -> None:
        """A new server generation, given every request the earlier ones served, then the
        forwarder opened to it."""
        _require_moto()
        self.generation += 1
        port = _free_port()
        env = {
            **os.environ,
            "INITIAL_NO_AUTH_ACTION_COUNT": "3",
            "MOTO_ENABLE_RECORDING": "true",
            "MOTO_RECORDER_FILEPATH": self._recording(self.generation),
        }
        with open(os.path.join(self.root, "server.log"), "ab") as log:
            self._server = subprocess.Popen(
                [sys.executable, "-m", "tests.servers.moto_recording_server",
                 "-H", "127.0.0.1", "-p", str(port)],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env,
                cwd=_REPO,
            )  # fmt: skip
        private = f"http://127.0.0.1:{port}"
        _wait_until_answering(private, self._server, self.root)
        _post(f"{private}/moto-api/recorder/stop-recording")  # neither seed nor replay recorded
        _post(f"{private}/moto-api/seed?a={_SEED}")
        for generation in range(1, self.generation):
            _replay(self._recording(generation), private)
        _post(f"{private}/moto-api/recorder/start-recording")
        if self.proxy is None:
            self.proxy = TcpProxy(_free_port(), port)
        self.proxy.open(port)

    def stop(self) -> None:
        if self.proxy is not None:
            self.proxy.close()
        if self._server is not None:
            _stop(self._server)
            self._server = None


@dataclass(frozen=True)
class S3Server:
    endpoint: str  # http://127.0.0.1:<port>
    access_key: str
    secret_key: str
    region: str = REGION
    process: MotoProcess | None = field(default=None, compare=False, repr=False)

    def restart(self, down_s: float = 0.0) -> None:
        """Kills the server (clients' connections are cut and refused), waits ``down_s``,
        starts a new one with everything the old one held."""
        if self.process is None:
            raise RuntimeError("only a server the tests started can be restarted")
        self.process.stop()
        time.sleep(down_s)
        self.process.start()

    def configuration(self) -> dict[str, Any]:
        """Flink's s3.* keys for this server."""
        return {
            "s3.endpoint": self.endpoint,
            "s3.access-key": self.access_key,
            "s3.secret-key": self.secret_key,
            "s3.path.style.access": True,
            "s3.region": self.region,
        }

    def client(self):
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=self.region,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
        )

    def bucket(self, prefix: str = "test") -> str:
        """A new, empty bucket; its name."""
        name = f"{prefix}-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        """Every object's key under ``prefix``, sorted; not the empty "directory/" markers
        pyarrow leaves where it deleted a directory's last file."""
        paginator = self.client().get_paginator("list_objects_v2")
        return sorted(
            o["Key"]
            for page in paginator.paginate(Bucket=bucket, Prefix=prefix)
            for o in page.get("Contents", [])
            if not o["Key"].endswith("/")
        )

    def get(self, bucket: str, key: str) -> bytes:
        return self.client().get_object(Bucket=bucket, Key=key)["Body"].read()

    def put(self, bucket: str, key: str, data: bytes) -> None:
        self.client().put_object(Bucket=bucket, Key=key, Body=data)

    def committed_records(self, bucket: str, prefix: str) -> list[Any]:
        """Every JSON line of the visible part files under ``prefix``: as Spark lists a
        directory, skipping names that start with "." or "_" (pending and in-progress parts)."""
        records = []
        for key in self.keys(bucket, prefix):
            if not key.rsplit("/", 1)[-1].startswith((".", "_")):
                records += [json.loads(line) for line in self.get(bucket, key).splitlines()]
        return records


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _require_moto() -> None:
    if importlib.util.find_spec("moto.server") is None:
        raise RuntimeError(
            "no S3 server for the tests: pip install 'moto[server]' (the test extras do)"
        )


@contextlib.contextmanager
def s3_server() -> Iterator[S3Server]:
    process = MotoProcess(tempfile.mkdtemp(prefix="barrierflow-s3-"))
    try:
        process.start()
        endpoint = f"http://127.0.0.1:{process.proxy.port}"
        access_key, secret_key = _create_user(endpoint)
        yield S3Server(endpoint, access_key, secret_key, process=process)
    finally:
        process.stop()
        shutil.rmtree(process.root, ignore_errors=True)


def _post(url: str) -> None:
    with urllib.request.urlopen(urllib.request.Request(url, data=b"", method="POST"), timeout=30):
        pass


def _replay(recording: str, endpoint: str) -> None:
    """Sends the recorded requests to ``endpoint`` again, in order, with their headers (their
    signatures hold: the same keys exist, having been replayed first)."""
    import requests

    with contextlib.suppress(FileNotFoundError), open(recording) as f, requests.Session() as s:
        for line in f:
            if not line.endswith("\n"):
                break  # the server was killed while it recorded this request: never answered
            entry = json.loads(line)
            if entry["method"] in ("GET", "HEAD"):
                continue  # changes nothing
            body = entry.get("body") or b""
            if entry.get("body_encoded"):
                body = base64.b64decode(body)
            headers = {k: v for k, v in entry["headers"].items() if k != "Transfer-Encoding"}
            url = urllib.parse.urlsplit(entry["url"])
            target = f"{endpoint}{url.path}" + (f"?{url.query}" if url.query else "")
            s.request(entry["method"], target, headers=headers, data=body, timeout=30)


def _create_user(endpoint: str) -> tuple[str, str]:
    """The three unauthenticated requests: a user, its policy, its access key."""
    import boto3

    iam = boto3.client(
        "iam",
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id="bootstrap",
        aws_secret_access_key="bootstrap",
    )
    iam.create_user(UserName="barrierflow")
    policy = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}],
    }
    iam.put_user_policy(UserName="barrierflow", PolicyName="s3", PolicyDocument=json.dumps(policy))
    key = iam.create_access_key(UserName="barrierflow")["AccessKey"]
    return key["AccessKeyId"], key["SecretAccessKey"]


def _wait_until_answering(
    endpoint: str, server: subprocess.Popen, root: str, timeout_s: float = 60
) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        with (
            contextlib.suppress(OSError),
            urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2) as reply,
        ):
            if reply.status == 200:
                return
        if server.poll() is not None or time.monotonic() > deadline:
            with open(os.path.join(root, "server.log")) as f:
                raise RuntimeError(f"the test S3 server did not start:\n{f.read()[-2000:]}")
        time.sleep(0.2)


def _stop(server: subprocess.Popen) -> None:
    """The server and anything it started: its whole process group."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, sig)
        try:
            server.wait(10)
            return
        except subprocess.TimeoutExpired:
            continue
