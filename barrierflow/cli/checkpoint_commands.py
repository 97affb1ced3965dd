"""``barrierflow checkpoints list`` and ``show``: what a job's checkpoints and savepoints did,
from its history and its metadata files, on any storage (``--conf``/``-D`` for ``s3.*``)."""

from __future__ import annotations

import json
from typing import Annotated

import msgspec
import typer
from rich.table import Table

from barrierflow.checkpoint.history import CheckpointRecord
from barrierflow.checkpoint.metadata import CheckpointMetadata, stream_size
from barrierflow.checkpoint.snapshot_directories import Found, find_snapshot_directories
from barrierflow.checkpoint.storage import CheckpointDirectory, locate_snapshot
from barrierflow.cli.app import checkpoints_app, console, errors, fail, time_of
from barrierflow.cli.storage_options import ConfFileOption, DynamicOption, configure
from barrierflow.errors import CorruptCheckpointError, StorageConfigError
from barrierflow.human_units import counted, human_bytes


def _found(uri: str) -> Found:
    """What ``uri`` holds: job directories, savepoints, or itself one of them."""
    try:
        return find_snapshot_directories(uri)
    except (StorageConfigError, FileNotFoundError, OSError) as e:
        errors.print(f"[red]Cannot read {uri}: {e}[/red]")
        raise typer.Exit(2) from e


def _job_roots(uri: str) -> list[str]:
    """Job directories under ``uri``, oldest first; ``uri`` itself when it is one."""
    return [d.uri for d in sorted(_found(uri).jobs(), key=lambda d: d.mtime_ms)]


def _snapshot_row(uri: str) -> dict:
    """The row of one snapshot's own directory (a savepoint, or a ``chk-N`` given alone)."""
    try:
        _, meta = locate_snapshot(uri)
    except (CorruptCheckpointError, StorageConfigError) as e:
        return {
            "job": "?",
            "job_name": "?",
            "id": None,
            "kind": "savepoint",
            "path": uri,
            "status": "UNUSABLE",
            "failure": getattr(e, "reason", str(e)),
            "restorable": False,
        }
    return {**_metadata_row(meta), "path": uri}


def _rows(job_root: str) -> list[dict]:
    """One row per checkpoint of the job: from its history, else from retained metadata."""
    storage = CheckpointDirectory(job_root)
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
                    "kind": r.kind.value,
                    "format": r.snapshot_format.value,
                    "path": r.external_path,
                    "status": r.status.value,
                    "time": time_of(r.trigger_timestamp_ms),
                    "duration_ms": round(r.duration_ms, 1),
                    "size_bytes": r.state_size,
                    "checkpointed_bytes": r.checkpointed_size,
                    "tasks": f"{r.num_acknowledged}/{r.num_tasks}",
                    "restorable": r.checkpoint_id in retained,
                    "failure": r.failure_reason,
                    "unaligned": r.unaligned,
                    "persisted_data": r.persisted_data,
                    "processed_data": r.processed_data,
                    "leader_epoch": r.leader_epoch,
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
        rows.append(_metadata_row(meta))
    return rows


def _metadata_row(meta: CheckpointMetadata) -> dict:
    return {
        "job": meta.job_id,
        "job_name": meta.job_name,
        "id": meta.checkpoint_id,
        "kind": meta.kind.value,
        "format": meta.snapshot_format.value,
        "path": None,
        "status": "COMPLETED",
        "time": time_of(meta.trigger_timestamp_ms),
        "duration_ms": meta.completion_timestamp_ms - meta.trigger_timestamp_ms,
        "size_bytes": meta.state_size(),
        "checkpointed_bytes": meta.checkpointed_size(),
        "tasks": f"{len(meta.stats)}/{len(meta.stats)}",
        "restorable": True,
        "failure": None,
        "unaligned": any(st.unaligned for st in meta.stats),
        "persisted_data": sum(st.persisted_data for st in meta.stats),
        "processed_data": sum(st.processed_data for st in meta.stats),
        "leader_epoch": meta.leader_epoch,
    }


@checkpoints_app.command("list")
def list_checkpoints(
    uri: Annotated[
        str,
        typer.Argument(
            help="A checkpoint directory, a directory of savepoints, one job's directory, or "
            "one checkpoint's or savepoint's own directory."
        ),
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
    conf_file: ConfFileOption = None,
    dynamic: DynamicOption = None,
) -> None:
    """A table of checkpoints: id, status, time, duration, size, unaligned (with the bytes
    in flight it persisted), tasks, restorable."""
    configure(conf_file, dynamic)
    found = _found(uri)
    rows = [row for d in sorted(found.jobs(), key=lambda d: d.mtime_ms) for row in _rows(d.uri)]
    rows += [_snapshot_row(d.uri) for d in found.snapshots()]
    if as_json:
        console.print_json(json.dumps(rows))
        return
    if not rows:
        console.print(f"No checkpoints or savepoints under {uri}", markup=False)
        return
    # the title on a line of its own: as a table's title it would wrap at the table's width
    console.print(f"Checkpoints under {uri}", markup=False, highlight=False, soft_wrap=True)
    table = Table()
    paths = any(r.get("path") for r in rows)  # savepoints: where each is
    epochs = any(r.get("leader_epoch") for r in rows)  # under high availability
    columns = (
        "job",
        *(("epoch",) if epochs else ()),
        "id",
        "status",
        "time",
        "duration",
        "size",
        "unaligned",
        "tasks",
        "restorable",
        *(("path",) if paths else ()),
    )
    for column in columns:
        numeric = column in ("epoch", "id", "duration", "size", "tasks")
        table.add_column(column, justify="right" if numeric else "left")
    for r in rows:
        status = r["status"] if r["status"] == "COMPLETED" else f"[red]{r['status']}[/red]"
        if r.get("kind", "checkpoint") != "checkpoint":
            in_format = f" ({r['format']})" if r.get("format") else ""
            status += f" [cyan]{r['kind']}{in_format}[/cyan]"
        if r.get("failure"):
            status += f" [dim]({r['failure'][:60]})[/dim]"
        table.add_row(
            f"{r['job_name']} {r['job'][:8]}",
            *((str(r.get("leader_epoch") or ""),) if epochs else ()),
            "" if r["id"] is None else str(r["id"]),
            status,
            r.get("time", ""),
            f"{r['duration_ms']} ms" if "duration_ms" in r else "",
            human_bytes(r["size_bytes"]) if "size_bytes" in r else "",
            f"yes ({human_bytes(r['persisted_data'])})" if r.get("unaligned") else "",
            r.get("tasks", ""),
            "yes" if r["restorable"] else "",
            *((r.get("path") or "",) if paths else ()),
        )
    console.print(table)


@checkpoints_app.command("show")
def show_checkpoint(
    uri: Annotated[
        str,
        typer.Argument(
            help="A checkpoint directory or one job's directory, with an ID; or, alone, one "
            "savepoint's or checkpoint's own directory (or its _metadata)."
        ),
    ],
    checkpoint_id: Annotated[int | None, typer.Argument(help="The checkpoint id.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="The whole metadata as JSON.")] = False,
    conf_file: ConfFileOption = None,
    dynamic: DynamicOption = None,
) -> None:
    """One checkpoint or savepoint: what it is, its figures per subtask and, if its state is
    still there, every operator's."""
    configure(conf_file, dynamic)
    if checkpoint_id is None:
        try:
            _, meta = locate_snapshot(uri)
        except (CorruptCheckpointError, StorageConfigError) as e:
            raise fail(str(e)) from e
        record = None
    else:
        record, meta = _find(uri, checkpoint_id)
    if as_json:
        doc = {
            "record": msgspec.to_builtins(record) if record else None,
            "metadata": msgspec.to_builtins(meta) if meta else None,
        }
        console.print_json(json.dumps(doc))
        return
    _show(record, meta)


def _find(
    uri: str, checkpoint_id: int
) -> tuple[CheckpointRecord | None, CheckpointMetadata | None]:
    for root in _job_roots(uri):
        storage = CheckpointDirectory(root)
        history = storage.read_history()
        records = history.records if history else []
        record = next((r for r in records if r.checkpoint_id == checkpoint_id), None)
        meta = None
        if checkpoint_id in storage.list_completed():
            try:
                meta = storage.read_metadata(checkpoint_id)
            except CorruptCheckpointError as e:
                raise fail(str(e)) from e
        elif record is not None and record.external_path is not None:
            try:  # a savepoint: its metadata is in its own directory, if it is still there
                _, meta = locate_snapshot(record.external_path)
            except (CorruptCheckpointError, StorageConfigError):
                meta = None
        if record is not None or meta is not None:
            return record, meta
    raise fail(f"No checkpoint {checkpoint_id} under {uri}")


def _show(record: CheckpointRecord | None, meta: CheckpointMetadata | None) -> None:
    if record is not None:
        what = "Savepoint" if record.external_path else "Checkpoint"
        console.print(
            f"[bold]{what} {record.checkpoint_id}[/bold] {record.status.value}: "
            f"{record.kind.value}, {record.snapshot_format.value} format, "
            f"{record.duration_ms:.0f} ms, {human_bytes(record.state_size)} "
            f"({human_bytes(record.checkpointed_size)} written), "
            f"{record.num_acknowledged}/{record.num_tasks} tasks"
            + (
                f"; unaligned, {human_bytes(record.persisted_data)} in flight persisted"
                if record.unaligned
                else "; aligned"
            )
            + f", {human_bytes(record.processed_data)} processed during alignment"
            + (f"; [red]{record.failure_reason}[/red]" if record.failure_reason else ""),
            soft_wrap=True,
        )
        if record.external_path:
            console.print(f"Path: {record.external_path}", soft_wrap=True)
    else:
        what = "Savepoint" if meta.is_savepoint else "Checkpoint"
        console.print(
            f"[bold]{what} {meta.checkpoint_id}[/bold] of job {meta.job_name} ({meta.job_id}): "
            f"{meta.kind.value}, {meta.snapshot_format.value} format, taken "
            f"{time_of(meta.trigger_timestamp_ms)}, {human_bytes(meta.state_size())}",
            soft_wrap=True,
        )
    stats = record.subtasks if record is not None else meta.stats
    table = Table(
        "vertex",
        "subtask",
        "start delay ms",
        "alignment ms",
        "sync ms",
        "async ms",
        "unaligned",
        "processed",
        "persisted",
        "state",
        "written",
    )
    for s in sorted(stats, key=lambda s: (s.vertex, s.subtask)):
        table.add_row(
            s.vertex,
            str(s.subtask),
            f"{s.start_delay_ms:.1f}",
            f"{s.alignment_ms:.1f}",
            f"{s.sync_ms:.1f}",
            f"{s.async_ms:.1f}",
            "yes" if s.unaligned else "",
            human_bytes(s.processed_data),
            human_bytes(s.persisted_data),
            human_bytes(s.state_size),
            human_bytes(s.checkpointed_size),
        )
    console.print(table)
    if meta is None:
        console.print("(not retained: its state is gone)")
        return
    for op in meta.operators:
        total = human_bytes(sum(s.state_size() for s in op.subtasks))
        shared = [p for s in op.subtasks for p in s.shared_paths()]
        files = f", {counted(len(shared), 'shared file')}" if shared else ""
        in_flight = [s.channel_state for s in op.subtasks if s.channel_state is not None]
        if in_flight:
            files += f", {human_bytes(sum(stream_size(h) for h in in_flight))} in flight"
        if op.coordinator is not None:
            files += f", coordinator state {human_bytes(len(op.coordinator.data))}"
        console.print(
            f"  operator {op.uid} ({op.name}), parallelism {op.parallelism}: {total}{files}"
        )
