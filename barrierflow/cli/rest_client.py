"""The job commands through a JobMaster's REST API (``-m HOST:PORT``, as Flink's
``--jobmanager``): for a job whose checkpoint directory the command cannot read, or on another
machine. Read-only requests need no secret from the JobMaster's own host; a request that
changes the job needs the job's secret (``--secret``, or ``BARRIERFLOW_SECRET``), from the
address file beside its checkpoints.

**I/O:** HTTP to the REST server.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from typing import Any

from barrierflow.cli.app import fail
from barrierflow.protocol.checkpoint_barrier import SnapshotFormat

TIMEOUT_S = 10.0


def base_url(jobmanager: str) -> str:
    """``HOST:PORT`` or a URL -> the REST API's base URL."""
    url = jobmanager if "://" in jobmanager else f"http://{jobmanager}"
    return url.rstrip("/")


def request(
    url: str, method: str = "GET", body: dict | None = None, secret: str | None = None
) -> Any:
    """The decoded JSON answer; ends the command with the server's error otherwise."""
    headers = {"Content-Type": "application/json"}
    if secret:
        headers["Authorization"] = f"Bearer {secret}"
    data = None if body is None else json.dumps(body).encode()
    try:
        with urllib.request.urlopen(
            urllib.request.Request(url, data=data, method=method, headers=headers),
            timeout=TIMEOUT_S,
        ) as answer:
            text = answer.read()
    except urllib.error.HTTPError as e:
        detail = e.read().decode(errors="replace")[:300]
        hint = (
            " (give the job's secret: --secret or BARRIERFLOW_SECRET)"
            if e.code in (401, 403)
            else ""
        )
        raise fail(f"{method} {url}: HTTP {e.code}: {detail}{hint}") from e
    except (urllib.error.URLError, OSError) as e:
        raise fail(f"No REST API answers at {url}: {e}") from e
    return json.loads(text) if text else None


class RestJob:
    """A running job reached through its REST API."""

    def __init__(self, jobmanager: str, job_id: str, secret: str | None) -> None:
        self.base = base_url(jobmanager)
        self.job_id = job_id
        self.secret = secret or os.environ.get("BARRIERFLOW_SECRET")
        overview = request(f"{self.base}/jobs/overview")
        jobs = {j["jid"]: j for j in overview.get("jobs", [])}
        if job_id not in jobs:
            runs = ", ".join(jobs) or "none"
            raise fail(f"The JobMaster at {self.base} runs no job {job_id} (it runs {runs})", 2)
        self.name = jobs[job_id]["name"]

    def savepoint(
        self,
        target_dir: str | None,
        snapshot_format: SnapshotFormat,
        wait_s: float,
        stop: bool = False,
        drain: bool = False,
    ) -> str:
        fmt = snapshot_format.value.upper()
        if stop:
            body = {"targetDirectory": target_dir, "drain": drain, "formatType": fmt}
            answer = request(f"{self.base}/jobs/{self.job_id}/stop", "POST", body, self.secret)
        else:
            body = {"target-directory": target_dir, "formatType": fmt}
            answer = request(
                f"{self.base}/jobs/{self.job_id}/savepoints", "POST", body, self.secret
            )
        status_url = f"{self.base}/jobs/{self.job_id}/savepoints/{answer['request-id']}"
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            status = request(status_url, secret=self.secret)
            if status["status"]["id"] == "COMPLETED":
                operation = status.get("operation") or {}
                if "location" in operation:
                    return operation["location"]
                raise fail(f"Savepoint failed: {operation.get('failure-cause', operation)}")
            time.sleep(0.2)
        raise fail(f"The savepoint of job {self.job_id} did not complete within {wait_s:g} s")

    def cancel(self) -> None:
        request(f"{self.base}/jobs/{self.job_id}?mode=cancel", "PATCH", None, self.secret)

    def wait_until_ended(self, wait_s: float) -> None:
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(
                    f"{self.base}/jobs/{self.job_id}", timeout=TIMEOUT_S
                ) as answer:
                    state = json.loads(answer.read())["state"]
            except (urllib.error.URLError, OSError, ValueError, KeyError):
                return  # the JobMaster is gone with its job
            if state in ("FINISHED", "CANCELED", "FAILED", "SUSPENDED"):
                return
            time.sleep(0.2)
        raise fail(f"Job {self.job_id} has not ended after {wait_s:g} s")
