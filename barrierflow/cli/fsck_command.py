"""``barrierflow checkpoints fsck``: checks the retained checkpoints and savepoints under a path
(``checkpoint/fsck.py`` decides, ``checkpoint/fsck_scan.py`` reads), reports each damaged file
with what depends on it, lists the files nothing references, and with ``--delete-orphans``
deletes those older than the newest retained snapshot. Exit status 0 when healthy, 1 when
something is damaged, 2 when the path cannot be read.

**I/O:** the storage (local disk, S3...).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from barrierflow.checkpoint.fsck import FsckReport
from barrierflow.checkpoint.fsck_scan import delete_orphans, fsck
from barrierflow.cli.app import checkpoints_app, console, errors
from barrierflow.cli.storage_options import ConfFileOption, DynamicOption, configure
from barrierflow.errors import StorageConfigError
from barrierflow.human_units import counted, human_bytes


@checkpoints_app.command("fsck")
def fsck_command(
    uri: Annotated[
        str,
        typer.Argument(
            help="A checkpoint directory, a directory of savepoints, one job's directory, or "
            "one checkpoint's or savepoint's own directory."
        ),
    ],
    delete: Annotated[
        bool,
        typer.Option(
            "--delete-orphans",
            help="Delete the files no snapshot references that are older than the newest "
            "retained snapshot.",
        ),
    ] = False,
    threads: Annotated[int, typer.Option(min=1, help="Files read at once.")] = 8,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
    conf_file: ConfFileOption = None,
    dynamic: DynamicOption = None,
) -> None:
    """Check checkpoints and savepoints: metadata, every referenced file (exists, size,
    checksum, complete SST files), shared files' references; list orphaned files."""
    configure(conf_file, dynamic)
    try:
        reports = fsck(uri, threads)
    except (FileNotFoundError, OSError, StorageConfigError) as e:
        errors.print(f"Cannot read {uri}: {e}", style="red", markup=False, highlight=False)
        raise typer.Exit(2) from e
    deleted = {r.root: delete_orphans(r) if delete else [] for r in reports}
    if as_json:
        console.print_json(json.dumps([_as_json(r, deleted[r.root]) for r in reports]))
    else:
        if not reports:
            console.print(f"No checkpoints or savepoints under {uri}", markup=False)
        for report in reports:
            _print(report, deleted[report.root], delete)
    if not all(r.healthy for r in reports):
        raise typer.Exit(1)


def _as_json(report: FsckReport, deleted: list[str]) -> dict:
    doc = asdict(report)
    doc["healthy"] = report.healthy
    doc["deleted"] = deleted
    for finding in doc["findings"]:
        finding["problem"] = finding["problem"].value
    return doc


def _print(report: FsckReport, deleted: list[str], delete: bool) -> None:
    # the title on a line of its own: as a table's title it would wrap at the table's width
    console.print(f"fsck {report.root}", markup=False, highlight=False, soft_wrap=True)
    table = Table("snapshot", "files", "status")
    for s in report.snapshots:
        status = f"[red]DAMAGED[/red] ({counted(len(s.damaged), 'file')})"
        if s.healthy:
            status = "[green]healthy[/green]"
        table.add_row(s.name, str(s.files), status)
    console.print(table)
    for finding in report.findings:
        bad = escape(finding.describe())
        console.print(f"[red]BAD[/red] {bad}", soft_wrap=True, highlight=False)
    removable = [o for o in report.orphans if o.deletable]
    for orphan in report.orphans:
        state = (
            "deleted"
            if orphan.path in deleted
            else ("deletable" if orphan.deletable else "kept: newer than the newest snapshot")
        )
        console.print(
            f"orphan {orphan.path} ({human_bytes(orphan.size)}): {state}",
            soft_wrap=True, highlight=False, markup=False,
        )  # fmt: skip
    if removable and not delete:
        total = human_bytes(sum(o.size for o in removable))
        console.print(
            f"{counted(len(removable), 'orphaned file')} ({total}) can go: --delete-orphans"
        )
    verdict = "healthy" if report.healthy else counted(len(report.findings), "problem")
    console.print(f"{report.root}: {verdict}", markup=False, highlight=False)
