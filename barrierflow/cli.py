"""The ``barrierflow`` command: run a job file, inspect checkpoints."""

from __future__ import annotations

import json
import logging
import runpy
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Annotated

import msgspec
import pyarrow.fs as pafs
import typer
from rich.console import Console
from rich.logging import RichHandler
from rich.table import Table

from barrierflow.api import environment
from barrierflow.api.configuration import Configuration
from barrierflow.checkpoint import storage_layout as layout
from barrierflow.checkpoint.history import HISTORY_FILE
from barrierflow.checkpoint.storage import (
    CheckpointStorage,
    job_root_uri,
    resolve_filesystem,
)
from barrierflow.cluster import job_master_client
from barrierflow.errors import ConfigurationError, CorruptCheckpointError, StorageConfigError
from barrierflow.protocol import messages as msg

app = typer.Typer(
    help="Stateful stream processing on Spark with Flink's checkpointing.",
    no_args_is_help=True,
    add_completion=False,
)
checkpoints_app = typer.Typer(
    help="Inspect the checkpoints under a checkpoint directory.", no_args_is_help=True
)
app.add_typer(checkpoints_app, name="checkpoints")
console = Console()
errors = Console(stderr=True)


@app.command()
def run(
    job: Annotated[Path, typer.Argument(help="A Python file that builds and executes a job.")],
    restore_from: Annotated[
        str | None,
        typer.Option("--from", help="Restore from this checkpoint (chk-N directory or _metadata)."),
    ] = None,
    resume: Annotated[
        str | None,
        typer.Option(
            "--resume",
            help="Run as this job id again after its driver died: restore its latest "
            "checkpoint and keep its checkpoint directory.",
        ),
    ] = None,
    checkpoint_dir: Annotated[
        str | None, typer.Option(help="Checkpoint storage (path or URI), over the job's own.")
    ] = None,
    parallelism: Annotated[
        int | None, typer.Option(min=1, help="Default parallelism, over the job's own.")
    ] = None,
    conf: Annotated[
        Path | None,
        typer.Option(
            "--conf", help="A YAML configuration file (Flink keys), over BARRIERFLOW_CONF."
        ),
    ] = None,
    dynamic: Annotated[
        list[str] | None,
        typer.Option("-D", help="key=value, over --conf; repeatable (-D parallelism.default=4)."),
    ] = None,
) -> None:
    """Run JOB as a script whose environments take the options given here."""
    if not job.is_file():
        errors.print(f"[red]No such job file: {job}[/red]")
        raise typer.Exit(2)
    try:
        configuration = Configuration.from_environment()
        if conf is not None:
            configuration = configuration.merge(Configuration.from_yaml_file(str(conf)))
        configuration = configuration.merge(Configuration.from_dynamic_properties(dynamic or []))
    except ConfigurationError as e:
        errors.print(f"[red]Invalid configuration:[/red] {e}")
        raise typer.Exit(2) from e
    logging.basicConfig(
        level=logging.INFO,
        format="%(message)s",
        datefmt="[%X]",
        handlers=[RichHandler(console=errors, show_path=False)],
    )
    logging.getLogger("py4j").setLevel(logging.WARNING)
    overrides: dict[str, object] = {"configuration": configuration}
    if restore_from:
        overrides["restore_path"] = restore_from
    if resume:
        overrides["resume_job_id"] = resume
    if checkpoint_dir:
        overrides["checkpoint_dir"] = checkpoint_dir
    if parallelism:
        overrides["parallelism"] = parallelism
    environment._cli_overrides.clear()
    environment._cli_overrides.update(overrides)
    sys.argv = [str(job)]
    sys.path.insert(0, str(job.resolve().parent))
    try:
        runpy.run_path(str(job), run_name="__main__")
    except Exception as e:
        errors.print(f"[red]Job failed:[/red] {e}")
        raise typer.Exit(1) from e
    finally:
        environment._cli_overrides.clear()


def _job_roots(uri: str) -> list[str]:
    """Job directories under ``uri``; ``uri`` itself when it is one."""
    try:
        fs, path = resolve_filesystem(uri)
        infos = fs.get_file_info(pafs.FileSelector(path))
    except (StorageConfigError, FileNotFoundError, OSError) as e:
        errors.print(f"[red]Cannot read {uri}: {e}[/red]")
        raise typer.Exit(2) from e
    if _is_job_root(infos):
        return [uri.rstrip("/")]
    roots = []
    for info in sorted(infos, key=lambda i: i.mtime):
        if info.type == pafs.FileType.Directory:
            inside = fs.get_file_info(pafs.FileSelector(info.path))
            if _is_job_root(inside):
                roots.append(f"{uri.rstrip('/')}/{info.base_name}")
    return roots


def _is_job_root(infos: list[pafs.FileInfo]) -> bool:
    """A job's directory holds its history, or at least one ``chk-N`` directory."""
    return any(
        i.base_name == HISTORY_FILE
        or (
            i.type == pafs.FileType.Directory
            and layout.parse_checkpoint_dir(i.base_name) is not None
        )
        for i in infos
    )


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _rows(job_root: str) -> list[dict]:
    """One row per checkpoint of the job: from its history, else from retained metadata."""
    storage = CheckpointStorage(job_root)
    retained = set(storage.list_completed())
    history = storage.read_history()
    rows = []
    if history is not None:
        for r in history.records:
            rows.append(
                {
                    "job": history.job_id,
                    "job_name": history.job_name,
                    "id": r.checkpoint_id,
                    "status": r.status.value,
                    "time": _time(r.trigger_timestamp_ms),
                    "duration_ms": round(r.duration_ms, 1),
                    "size_bytes": r.state_size,
                    "checkpointed_bytes": r.checkpointed_size,
                    "tasks": f"{r.num_acknowledged}/{r.num_tasks}",
                    "restorable": r.checkpoint_id in retained,
                    "failure": r.failure_reason,
                }
            )
        return rows
    for cid in sorted(retained):
        try:
            meta = storage.read_metadata(cid)
        except CorruptCheckpointError as e:
            rows.append(
                {
                    "job": job_root.rsplit("/", 1)[-1],
                    "job_name": "?",
                    "id": cid,
                    "status": "UNUSABLE",
                    "failure": e.reason,
                    "restorable": False,
                }
            )
            continue
        rows.append(
            {
                "job": meta.job_id,
                "job_name": meta.job_name,
                "id": cid,
                "status": "COMPLETED",
                "time": _time(meta.trigger_timestamp_ms),
                "duration_ms": meta.completion_timestamp_ms - meta.trigger_timestamp_ms,
                "size_bytes": meta.state_size(),
                "checkpointed_bytes": meta.checkpointed_size(),
                "tasks": f"{len(meta.stats)}/{len(meta.stats)}",
                "restorable": True,
                "failure": None,
            }
        )
    return rows


def _time(timestamp_ms: int) -> str:
    return datetime.fromtimestamp(timestamp_ms / 1000).isoformat(timespec="milliseconds")


@checkpoints_app.command("list")
def list_checkpoints(
    uri: Annotated[str, typer.Argument(help="A checkpoint directory, or one job's directory.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    """A table of checkpoints: id, status, time, duration, size, tasks, restorable."""
    rows = [row for root in _job_roots(uri) for row in _rows(root)]
    if as_json:
        console.print_json(json.dumps(rows))
        return
    if not rows:
        console.print(f"No checkpoints under {uri}")
        return
    table = Table(title=f"Checkpoints under {uri}")
    for column in ("job", "id", "status", "time", "duration", "size", "tasks", "restorable"):
        numeric = column in ("id", "duration", "size", "tasks")
        table.add_column(column, justify="right" if numeric else "left")
    for r in rows:
        status = r["status"] if r["status"] == "COMPLETED" else f"[red]{r['status']}[/red]"
        if r.get("failure"):
            status += f" [dim]({r['failure'][:60]})[/dim]"
        table.add_row(
            f"{r['job_name']} {r['job'][:8]}",
            str(r["id"]),
            status,
            r.get("time", ""),
            f"{r['duration_ms']} ms" if "duration_ms" in r else "",
            _size(r["size_bytes"]) if "size_bytes" in r else "",
            r.get("tasks", ""),
            "yes" if r["restorable"] else "",
        )
    console.print(table)


@checkpoints_app.command("show")
def show_checkpoint(
    uri: Annotated[str, typer.Argument(help="A checkpoint directory or one job's directory.")],
    checkpoint_id: Annotated[int, typer.Argument(help="The checkpoint id.")],
    as_json: Annotated[bool, typer.Option("--json", help="The whole metadata as JSON.")] = False,
) -> None:
    """One checkpoint: its figures per subtask and, if retained, every state handle."""
    for root in _job_roots(uri):
        storage = CheckpointStorage(root)
        history = storage.read_history()
        records = history.records if history else []
        record = next((r for r in records if r.checkpoint_id == checkpoint_id), None)
        meta = None
        if checkpoint_id in storage.list_completed():
            try:
                meta = storage.read_metadata(checkpoint_id)
            except CorruptCheckpointError as e:
                errors.print(f"[red]{e}[/red]")
                raise typer.Exit(1) from e
        if record is not None or meta is not None:
            break
    else:
        errors.print(f"[red]No checkpoint {checkpoint_id} under {uri}[/red]")
        raise typer.Exit(1)
    if as_json:
        doc = {
            "record": msgspec.to_builtins(record) if record else None,
            "metadata": msgspec.to_builtins(meta) if meta else None,
        }
        console.print_json(json.dumps(doc))
        return
    if record is not None:
        console.print(
            f"[bold]Checkpoint {checkpoint_id}[/bold] {record.status.value}: "
            f"{record.duration_ms:.0f} ms, {_size(record.state_size)} "
            f"({_size(record.checkpointed_size)} written), "
            f"{record.num_acknowledged}/{record.num_tasks} tasks"
            + (f"; [red]{record.failure_reason}[/red]" if record.failure_reason else "")
        )
    stats = record.subtasks if record is not None else meta.stats
    table = Table(
        "vertex",
        "subtask",
        "sync ms",
        "async ms",
        "alignment ms",
        "aligned bytes",
        "state",
        "written",
    )
    for s in sorted(stats, key=lambda s: (s.vertex, s.subtask)):
        table.add_row(
            s.vertex,
            str(s.subtask),
            f"{s.sync_ms:.1f}",
            f"{s.async_ms:.1f}",
            f"{s.alignment_ms:.1f}",
            _size(s.alignment_bytes),
            _size(s.state_size),
            _size(s.checkpointed_size),
        )
    console.print(table)
    if meta is None:
        console.print("(not retained: its state is gone)")
        return
    for op in meta.operators:
        size = sum(s.state_size() for s in op.subtasks)
        shared = [p for s in op.subtasks for p in s.shared_paths()]
        files = f", {len(shared)} shared files" if shared else ""
        console.print(
            f"  operator {op.uid} ({op.name}), parallelism {op.parallelism}: {_size(size)}{files}"
        )


@app.command()
def cancel(
    job_id: Annotated[str, typer.Argument(help="The id of a running job.")],
    checkpoint_dir: Annotated[
        str, typer.Option(help="The job's checkpoint directory (where its address is recorded).")
    ],
    wait_s: Annotated[float, typer.Option(help="How long to wait for the job to stop.")] = 60,
) -> None:
    """Cancel a running job; its checkpoints follow the externalized retention setting."""
    storage = CheckpointStorage(job_root_uri(checkpoint_dir, job_id))
    address = job_master_client.read_address(storage)
    if address is None:
        errors.print(f"[red]No running job {job_id} under {checkpoint_dir}[/red]")
        raise typer.Exit(1)
    reply = job_master_client.ask(
        address["endpoint"], msg.CancelJob(0, job_id, address["secret"]), timeout_s=10
    )
    if reply is None:
        errors.print(f"[red]The JobMaster at {address['endpoint']} did not answer[/red]")
        raise typer.Exit(1)
    if not (isinstance(reply, msg.CancelJobReply) and reply.accepted):
        errors.print(f"[red]Cancel refused: {getattr(reply, 'reason', reply)}[/red]")
        raise typer.Exit(1)
    console.print(f"Canceling job {job_id} ({address['job_name']})...")
    deadline = time.monotonic() + wait_s
    while storage.read_small_file(layout.JOBMASTER_ADDRESS_FILE) is not None:
        if time.monotonic() > deadline:
            errors.print(f"[red]Job {job_id} has not stopped after {wait_s:g} s[/red]")
            raise typer.Exit(1)
        time.sleep(0.2)
    console.print(f"Job {job_id} canceled")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
