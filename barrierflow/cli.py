"""The ``barrierflow`` command: run a job file, inspect checkpoints."""

from __future__ import annotations

import json
import logging
import runpy
import sys
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
from barrierflow.checkpoint import storage_layout as layout
from barrierflow.checkpoint.metadata import CheckpointMetadata, CorruptCheckpointError
from barrierflow.checkpoint.storage import (
    CheckpointStorage,
    StorageConfigError,
    resolve_filesystem,
)

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
    checkpoint_dir: Annotated[
        str | None, typer.Option(help="Checkpoint storage (path or URI), over the job's own.")
    ] = None,
    parallelism: Annotated[
        int | None, typer.Option(min=1, help="Default parallelism, over the job's own.")
    ] = None,
) -> None:
    """Run JOB as a script whose environments take the options given here."""
    if not job.is_file():
        errors.print(f"[red]No such job file: {job}[/red]")
        raise typer.Exit(2)
    logging.basicConfig(
        level=logging.INFO,
        format="%(message)s",
        datefmt="[%X]",
        handlers=[RichHandler(console=errors, show_path=False)],
    )
    logging.getLogger("py4j").setLevel(logging.WARNING)
    overrides: dict[str, object] = {}
    if restore_from:
        overrides["restore_path"] = restore_from
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
    dirs = [i for i in infos if i.type == pafs.FileType.Directory]
    if any(layout.parse_checkpoint_dir(i.base_name) is not None for i in dirs):
        return [uri.rstrip("/")]
    return [f"{uri.rstrip('/')}/{i.base_name}" for i in sorted(dirs, key=lambda i: i.mtime)]


def _completed(job_root: str) -> list[tuple[int, CheckpointMetadata | CorruptCheckpointError]]:
    storage = CheckpointStorage(job_root)
    found: list[tuple[int, CheckpointMetadata | CorruptCheckpointError]] = []
    for location in storage.list_completed():
        try:
            found.append((location.checkpoint_id, storage.read_metadata(location.checkpoint_id)))
        except CorruptCheckpointError as e:
            found.append((location.checkpoint_id, e))
    return found


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


@checkpoints_app.command("list")
def list_checkpoints(
    uri: Annotated[str, typer.Argument(help="A checkpoint directory, or one job's directory.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    """A table of the completed checkpoints: id, time, duration, size, tasks."""
    rows = []
    for root in _job_roots(uri):
        for cid, meta in _completed(root):
            if isinstance(meta, CorruptCheckpointError):
                rows.append({"job": root.rsplit("/", 1)[-1], "id": cid, "error": meta.reason})
                continue
            rows.append(
                {
                    "job": meta.job_id,
                    "job_name": meta.job_name,
                    "id": cid,
                    "time": datetime.fromtimestamp(meta.completion_timestamp_ms / 1000).isoformat(
                        timespec="seconds"
                    ),
                    "duration_ms": meta.completion_timestamp_ms - meta.trigger_timestamp_ms,
                    "size_bytes": meta.state_size(),
                    "tasks": len(meta.stats),
                }
            )
    if as_json:
        console.print_json(json.dumps(rows))
        return
    if not rows:
        console.print(f"No completed checkpoints under {uri}")
        return
    table = Table(title=f"Checkpoints under {uri}")
    for column in ("job", "id", "time", "duration", "size", "tasks"):
        table.add_column(
            column, justify="right" if column in ("id", "duration", "size", "tasks") else "left"
        )
    for r in rows:
        if "error" in r:
            table.add_row(
                r["job"][:12], str(r["id"]), f"[red]unusable: {r['error']}[/red]", "", "", ""
            )
        else:
            table.add_row(
                f"{r['job_name']} {r['job'][:8]}",
                str(r["id"]),
                r["time"],
                f"{r['duration_ms']} ms",
                _size(r["size_bytes"]),
                str(r["tasks"]),
            )
    console.print(table)


@checkpoints_app.command("show")
def show_checkpoint(
    uri: Annotated[str, typer.Argument(help="A job's checkpoint directory.")],
    checkpoint_id: Annotated[int, typer.Argument(help="The checkpoint id.")],
    as_json: Annotated[bool, typer.Option("--json", help="The whole metadata as JSON.")] = False,
) -> None:
    """One checkpoint: its operators, subtasks, state handles and figures."""
    roots = _job_roots(uri)
    for root in roots:
        storage = CheckpointStorage(root)
        if any(c.checkpoint_id == checkpoint_id for c in storage.list_completed()):
            try:
                meta = storage.read_metadata(checkpoint_id)
            except CorruptCheckpointError as e:
                errors.print(f"[red]{e}[/red]")
                raise typer.Exit(1) from e
            break
    else:
        errors.print(f"[red]No completed checkpoint {checkpoint_id} under {uri}[/red]")
        raise typer.Exit(1)
    if as_json:
        console.print_json(msgspec.json.encode(meta).decode())
        return
    console.print(
        f"[bold]Checkpoint {meta.checkpoint_id}[/bold] of {meta.job_name} "
        f"({meta.job_id}): {_size(meta.state_size())}, "
        f"{meta.completion_timestamp_ms - meta.trigger_timestamp_ms} ms"
    )
    table = Table("vertex", "subtask", "sync ms", "async ms", "alignment ms", "state")
    for s in sorted(meta.stats, key=lambda s: (s.vertex, s.subtask)):
        table.add_row(
            s.vertex,
            str(s.subtask),
            f"{s.sync_ms:.1f}",
            f"{s.async_ms:.1f}",
            f"{s.alignment_ms:.1f}",
            _size(s.state_size),
        )
    console.print(table)
    for op in meta.operators:
        size = sum(s.state_size() for s in op.subtasks)
        console.print(
            f"  operator {op.uid} ({op.name}), parallelism {op.parallelism}: {_size(size)}"
        )


def main() -> None:
    app()


if __name__ == "__main__":
    main()
