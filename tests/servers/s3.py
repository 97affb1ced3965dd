"""A real S3-protocol server for tests: the ``moto[server]`` package's ``moto_server`` on a free
localhost port, with authentication on (so that wrong credentials are refused, as AWS does).

Its first three requests may be unauthenticated: they create an IAM user allowed ``s3:*`` and
its access key, which the tests then use. Everything lives in the server's memory; it is
stopped (its whole process group) at the end of the test session.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

REGION = "us-east-1"


@dataclass(frozen=True)
class S3Server:
    endpoint: str  # http://127.0.0.1:<port>
    access_key: str
    secret_key: str
    region: str = REGION

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


def _moto_server() -> str:
    beside = os.path.join(os.path.dirname(sys.executable), "moto_server")
    found = beside if os.path.exists(beside) else shutil.which("moto_server")
    if not found:
        raise RuntimeError(
            "no S3 server for the tests: pip install 'moto[server]' (the test extras do)"
        )
    return found


@contextlib.contextmanager
def s3_server() -> Iterator[S3Server]:
    root = tempfile.mkdtemp(prefix="barrierflow-s3-")
    port = _free_port()
    env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "3"}
    with open(os.path.join(root, "server.log"), "wb") as log:
        server = subprocess.Popen(
            [_moto_server(), "-H", "127.0.0.1", "-p", str(port)],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env,
        )  # fmt: skip
    try:
        endpoint = f"http://127.0.0.1:{port}"
        _wait_until_answering(endpoint, server, root)
        access_key, secret_key = _create_user(endpoint)
        yield S3Server(endpoint, access_key, secret_key)
    finally:
        _stop(server)
        shutil.rmtree(root, ignore_errors=True)


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
