"""``barrierflow rescale JOB_ID -p N [--vertex UID=N ...]``: changes a running job's
parallelism (``cluster/scaling/rescaler.py``: a checkpoint at once, then the job restarted from
it at the new parallelism) and returns once it runs so, printing what changed and the downtime;
or exits 1 with why nothing changed. The job is found as the other job commands find it.

**I/O:** the job's address file and its control endpoint, or its REST API (``-m``).
"""

from __future__ import annotations

import time
from typing import Annotated

import msgspec
import typer

from barrierflow.cli.app import app, console, errors, fail
from barrierflow.cli.job_commands import (
    CheckpointDirOption,
    HaDirOption,
    JobManagerOption,
    SecretOption,
    running_job,
)
from barrierflow.cli.rest_client import RestJob, request
from barrierflow.cli.storage_options import ConfFileOption, DynamicOption, configure
from barrierflow.control import messages as msg


@app.command()
def rescale(
    job_id: Annotated[str, typer.Argument(help="The id of a running job.")],
    parallelism: Annotated[
        int | None,
        typer.Option(
            "-p",
            "--parallelism",
            help="The job's parallelism: every operator that has none of its own takes it.",
        ),
    ] = None,
    vertex: Annotated[
        list[str] | None,
        typer.Option(
            "--vertex",
            help="UID=N: operator UID's parallelism (its chain follows it); repeatable.",
        ),
    ] = None,
    checkpoint_dir: CheckpointDirOption = None,
    ha_dir: HaDirOption = None,
    jobmanager: JobManagerOption = None,
    secret: SecretOption = None,
    wait_s: Annotated[
        float, typer.Option("--wait-s", help="How long to wait for the job to run rescaled.")
    ] = 600,
    conf_file: ConfFileOption = None,
    dynamic: DynamicOption = None,
) -> None:
    """Rescale a running job: a checkpoint now, then the job from it at the new parallelism;
    prints the downtime."""
    per_operator = {}
    for item in vertex or []:
        uid, sep, value = item.partition("=")
        if not sep or not value.strip().isdigit():
            raise fail(f"--vertex {item!r}: expected UID=N, N a positive integer", 2)
        per_operator[uid.strip()] = int(value)
    if parallelism is None and not per_operator:
        raise fail("Which parallelism? Give -p N or --vertex UID=N", 2)
    configuration = configure(conf_file, dynamic)
    job = running_job(job_id, configuration, checkpoint_dir, ha_dir, jobmanager, secret)
    errors.print(f"Rescaling job {job_id} ({job.name})...", highlight=False)
    if isinstance(job, RestJob):
        record = _through_rest(job, parallelism, per_operator, wait_s)
    else:
        ask = msg.RescaleJob(0, job_id, job.secret, parallelism or 0, per_operator)
        reply = job.ask(ask, wait_s)
        if not isinstance(reply, msg.RescaleJobReply) or reply.record is None:
            raise fail(f"Rescale refused: {getattr(reply, 'error', reply)}")
        record = msgspec.json.decode(reply.record)
    _print(job_id, record)


def _through_rest(
    job: RestJob, parallelism: int | None, per_operator: dict[str, int], wait_s: float
) -> dict:
    if per_operator:
        raise fail("--vertex takes operator uids, which the REST API does not: use -p, or "
                   "PUT /jobs/:id/resource-requirements by vertex id", 2)  # fmt: skip
    requirements = request(f"{job.base}/jobs/{job.job_id}/resource-requirements")
    body = {v: {"parallelism": {"lowerBound": 1, "upperBound": parallelism}} for v in requirements}
    started = request(
        f"{job.base}/jobs/{job.job_id}/resource-requirements", "PUT", body, job.secret
    )
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        for record in request(f"{job.base}/jobs/{job.job_id}/rescales")["rescales"]:
            if record["id"] == started["rescale-id"] and record["status"] != "IN_PROGRESS":
                if record["status"] != "COMPLETED":
                    raise fail(f"Rescale {record['status'].lower()}: {record['detail']}")
                return record
        time.sleep(0.2)
    raise fail(f"The rescale of job {job.job_id} has not ended after {wait_s:g} s")


def _print(job_id: str, record: dict) -> None:
    changed = [
        f"{name}: {record['from_parallelism'].get(name, '?')} -> {p}"
        for name, p in record["to_parallelism"].items()
        if record["from_parallelism"].get(name) != p
    ]
    downtime = record.get("downtime_ms")
    console.print(
        f"Job {job_id} rescaled from checkpoint {record.get('checkpoint_id')}; "
        + "; ".join(changed)
        + (f". Downtime: {downtime / 1000:.2f} s" if downtime is not None else ""),
        highlight=False,
        soft_wrap=True,
    )
