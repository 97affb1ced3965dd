"""Rescaling a running job on local Spark as a user does: ``barrierflow rescale JOB_ID -p N``
finds the job by its id, returns once it runs at the new parallelism and prints the downtime;
the REST API shows and sets each vertex's parallelism (Flink's resource requirements) and keeps
the rescale history; what cannot be done is refused before anything stops, saying why; and the
committed output is exactly once through it all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest

from tests.jobs import odd_even

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
N = 30000
JOB = """
import sys
from barrierflow import StreamExecutionEnvironment
from tests.jobs import odd_even

base = sys.argv[1]
env = StreamExecutionEnvironment().set_parallelism(1)
odd_even.build(env, {n}, f"{{base}}/out", f"{{base}}/ckpt", interval_ms=200, delay_s=0.0005)
env.execute("rescaled")
"""


def cli(tmp_path: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYSPARK_PYTHON": sys.executable,
           "BARRIERFLOW_HOME": str(tmp_path / "home")}  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "barrierflow.cli", *args], env=env, cwd=ROOT,
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def rest(url: str, method: str = "GET", body: dict | None = None, secret: str | None = None):
    headers = {"Content-Type": "application/json"}
    if secret:
        headers["Authorization"] = f"Bearer {secret}"
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def test_a_running_job_rescaled_by_its_id_and_through_rest_is_exactly_once(tmp_path):
    job = tmp_path / "job.py"
    job.write_text(textwrap.dedent(JOB.format(n=N)))
    started = cli(tmp_path, "run", "-d", str(job), "-D", "rest.port=0", "--", str(tmp_path))
    assert started.returncode == 0, started.stderr
    job_id = started.stdout.strip().splitlines()[-1]
    address = json.loads((tmp_path / "ckpt" / job_id / "_jobmaster.json").read_text())
    url, secret = address["rest_url"], address["secret"]
    deadline = time.monotonic() + 60
    while not list((tmp_path / "ckpt" / job_id).glob("chk-*/_metadata")):
        assert time.monotonic() < deadline, "no checkpoint completed"
        time.sleep(0.2)

    up = cli(tmp_path, "rescale", job_id, "-p", "2")
    assert up.returncode == 0, up.stderr
    assert "-> 2" in up.stdout and "Downtime: " in up.stdout

    status, requirements = rest(f"{url}/jobs/{job_id}/resource-requirements")
    assert status == 200
    assert {r["parallelism"]["upperBound"] for r in requirements.values()} == {2}

    refused = cli(tmp_path, "rescale", job_id, "-p", "3")
    assert refused.returncode == 1 and "the cluster offers 2" in refused.stderr, refused.stderr
    unknown = cli(tmp_path, "rescale", job_id, "--vertex", "nope=2")
    assert unknown.returncode == 1 and "the job has no operator 'nope'" in unknown.stderr

    body = {v: {"parallelism": {"lowerBound": 1, "upperBound": 1}} for v in requirements}
    assert rest(f"{url}/jobs/{job_id}/resource-requirements", "PUT", body)[0] == 401
    status, answer = rest(f"{url}/jobs/{job_id}/resource-requirements", "PUT", body, secret)
    assert status in (200, 202), answer
    deadline = time.monotonic() + 120
    while True:
        rescales = rest(f"{url}/jobs/{job_id}/rescales")[1]["rescales"]
        if rescales[0]["id"] == answer["rescale-id"] and rescales[0]["status"] != "IN_PROGRESS":
            break
        assert time.monotonic() < deadline, rescales[0]
        time.sleep(0.2)
    assert [r["status"] for r in rescales] == ["COMPLETED", "REFUSED", "REFUSED", "COMPLETED"]

    missing = cli(tmp_path, "rescale", "0" * 32, "-p", "2")
    assert missing.returncode == 2 and "No job" in missing.stderr

    deadline = time.monotonic() + 300
    while json.loads(cli(tmp_path, "list", "--json").stdout):
        assert time.monotonic() < deadline, "the job did not finish"
        time.sleep(0.5)
    odd_even.check_exactly_once(odd_even.read_committed(str(tmp_path / "out")), N)
