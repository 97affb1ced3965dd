"""``barrierflow list``: the jobs that run, as Flink's ``list`` (``-a``: the ended ones too),
from the user's job registry on this machine (``cluster/job_registry.py``), from a JobMaster's
REST API (``-m HOST:PORT``), or from a high-availability storage directory (``--ha-dir``: each
cluster id's job, its state and who leads it).

A registry entry whose driver is gone while it says RUNNING is shown as stale ("gone"), and no
command is ever sent there.

**I/O:** the registry directory, HTTP to a REST API, the HA storage directory.
"""

from __future__ import annotations

import json
import os
from typing import Annotated

import msgspec
import typer
from rich.table import Table

from barrierflow.checkpoint.storage_layout import JOB_RECORD_FILE, LEADER_DIR, parse_epoch_file
from barrierflow.cli.app import app, console, fail, time_of
from barrierflow.cli.rest_client import base_url, request
from barrierflow.cli.storage_options import ConfFileOption, DynamicOption, configure
from barrierflow.cluster.job_registry import JobRegistry, Liveness, liveness


@app.command("list")
def list_jobs(
    all_jobs: Annotated[
        bool, typer.Option("--all", "-a", help="Ended jobs too (those of the last 30 days).")
    ] = False,
    jobmanager: Annotated[
        str | None,
        typer.Option("-m", "--jobmanager", help="HOST:PORT of a JobMaster's REST API."),
    ] = None,
    ha_dir: Annotated[
        str | None,
        typer.Option("--ha-dir", help="A high-availability storage directory: its jobs."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
    conf_file: ConfFileOption = None,
    dynamic: DynamicOption = None,
) -> None:
    """List running jobs: id, name, state, since when, web UI, checkpoint directory."""
    configuration = configure(conf_file, dynamic)
    if jobmanager:
        rows = _from_rest(jobmanager)
    elif ha_dir:
        rows = _from_ha_storage(ha_dir)
    else:
        registry = JobRegistry(configuration.get("job-registry.dir"))
        rows = _from_registry(registry)
    if not all_jobs:
        rows = [
            r for r in rows if r["state"] not in ("FINISHED", "FAILED", "CANCELED", "SUSPENDED")
        ]
    if as_json:
        console.print_json(json.dumps(rows))
        return
    if not rows:
        console.print("No running jobs." if not all_jobs else "No jobs.", markup=False)
        return
    table = Table("job id", "name", "state", "started", "web UI", "where")
    for r in rows:
        state = r["state"] if not r.get("stale") else "[red]gone (stale entry)[/red]"
        table.add_row(
            r["job_id"],
            r["name"],
            state,
            r.get("started") or "",
            r.get("rest_url") or "",
            r.get("where") or "",
        )
    console.print(table)


def _from_registry(registry: JobRegistry) -> list[dict]:
    rows = []
    for entry in registry.entries():
        state = liveness(entry)
        rows.append(
            {
                "job_id": entry.job_id,
                "name": entry.job_name,
                "state": entry.state,
                "stale": state is Liveness.GONE,
                "started": time_of(entry.started_ms),
                "ended": time_of(entry.updated_ms) if entry.ended else None,
                "rest_url": entry.rest_url,
                "where": entry.job_root_uri,
                "host": entry.host,
                "pid": entry.pid,
                "cluster_id": entry.cluster_id,
                "error": entry.error,
            }
        )
    return rows


def _from_rest(jobmanager: str) -> list[dict]:
    base = base_url(jobmanager)
    return [
        {
            "job_id": j["jid"],
            "name": j["name"],
            "state": j["state"],
            "stale": False,
            "started": time_of(j["start-time"]),
            "rest_url": base,
            "where": None,
        }
        for j in request(f"{base}/jobs/overview").get("jobs", [])
    ]


class _HaRecord(msgspec.Struct):
    job_id: str
    job_name: str
    state: str
    created_ms: int = 0
    checkpoint_storage: str | None = None
    epoch: int = 0


def _from_ha_storage(ha_dir: str) -> list[dict]:
    """Each cluster id's job in a local HA storage directory."""
    root = ha_dir.removeprefix("file://")
    try:
        clusters = sorted(os.listdir(root))
    except OSError as e:
        raise fail(f"Cannot read the HA storage directory {ha_dir}: {e}", 2) from e
    rows = []
    for cluster in clusters:
        try:
            with open(os.path.join(root, cluster, JOB_RECORD_FILE), "rb") as f:
                record = msgspec.json.decode(f.read(), type=_HaRecord)
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            continue
        epochs = [
            e
            for e in map(parse_epoch_file, _listing(os.path.join(root, cluster, LEADER_DIR)))
            if e is not None
        ]
        rows.append(
            {
                "job_id": record.job_id,
                "name": record.job_name,
                "state": record.state,
                "stale": False,
                "started": time_of(record.created_ms) if record.created_ms else None,
                "where": f"cluster id {cluster}, epoch {max(epochs, default=0)}",
                "cluster_id": cluster,
            }
        )
    return rows


def _listing(directory: str) -> list[str]:
    try:
        return os.listdir(directory)
    except OSError:
        return []
