"""``barrierflow state query`` (SQL on an operator's keyed state, on a local Spark session) and
``barrierflow savepoint info`` (what a savepoint holds, per operator and state), on any storage
(``--conf``/``-D`` for ``s3.*``).

**I/O:** the snapshot's metadata; ``state query`` starts Spark, whose own log goes to a file.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Annotated, Any

import typer
from rich.table import Table

from barrierflow.checkpoint.storage import locate_snapshot
from barrierflow.cli.app import HELP_OPTIONS, app, console, errors, fail
from barrierflow.cli.storage_options import ConfFileOption, DynamicOption, configure
from barrierflow.errors import ConfigurationError, CorruptCheckpointError, StorageConfigError
from barrierflow.human_units import human_bytes

state_app = typer.Typer(
    context_settings=HELP_OPTIONS,
    help="Look into the state of a savepoint or retained checkpoint.",
    no_args_is_help=True,
)
app.add_typer(state_app, name="state")


def savepoint_info(path: str, as_json: bool) -> None:
    """Prints one row per operator and state of the snapshot at ``path``."""
    from barrierflow.state_processor.savepoint_metadata import savepoint_metadata

    try:
        root, metadata = locate_snapshot(path)
        rows = savepoint_metadata(root, metadata)
    except (CorruptCheckpointError, StorageConfigError, OSError) as e:
        raise fail(f"Cannot read {path}: {e}") from e
    what = "Savepoint" if metadata.is_savepoint else "Checkpoint"
    if as_json:
        doc = {
            "checkpoint_id": metadata.checkpoint_id,
            "job_id": metadata.job_id,
            "kind": metadata.kind.value,
            "snapshot_format": metadata.snapshot_format.value,
            "states": [asdict(r) for r in rows],
        }
        console.print_json(json.dumps(doc))
        return
    table = Table(
        title=f"{what} {metadata.checkpoint_id} of job {metadata.job_name} ({metadata.job_id}), "
        f"{metadata.snapshot_format.value} format: {root}"
    )
    for column in ("uid", "parallelism", "max parallelism", "state", "kind", "type", "backend",
                   "format", "size"):  # fmt: skip
        table.add_column(column, justify="right" if "parallelism" in column else "left")
    for r in rows:
        table.add_row(
            r.uid, str(r.parallelism), str(r.max_parallelism), r.state, r.kind, r.type,
            r.backend, r.format, human_bytes(r.size_bytes),
        )  # fmt: skip
    console.print(table)


@state_app.command("query")
def query(
    path: Annotated[str, typer.Argument(help="A savepoint's or retained checkpoint's directory.")],
    sql: Annotated[str, typer.Argument(help='A query, e.g. "SELECT * FROM `counter` LIMIT 10".')],
    uid: Annotated[
        str, typer.Option("--uid", help="The operator: its keyed state is the view of this name.")
    ],
    limit: Annotated[int, typer.Option(help="Print at most this many rows.")] = 1000,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON lines for scripts.")] = False,
    conf_file: ConfFileOption = None,
    dynamic: DynamicOption = None,
) -> None:
    """Run SQL on the keyed state of one operator: the view named after its uid has a `key`
    column and one column per state, typed as the job declared them."""
    configure(conf_file, dynamic)
    from barrierflow.cluster.spark.session import default_spark_log, get_or_create_session
    from barrierflow.state_processor import SavepointReader

    spark_log = default_spark_log()
    errors.print(f"Starting Spark (its log: {spark_log})...", markup=False, highlight=False)
    spark = get_or_create_session(1, spark_log=spark_log)
    try:
        reader = SavepointReader.read(spark, path)
        frame = reader.read_keyed_state(uid, reader.keyed_state_descriptors(uid))
        frame.createOrReplaceTempView(f"`{uid.replace('`', '``')}`")
        result = spark.sql(sql)
        rows = result.limit(limit + 1).collect()
    except ConfigurationError as e:
        raise fail(str(e)) from e
    except Exception as e:  # Spark's analysis and parse errors: the query's own fault
        raise fail(f"The query failed: {_first_line(e)}") from e
    _print_rows(result.columns, [r.asDict(recursive=True) for r in rows], limit, as_json)


def _print_rows(columns: list[str], rows: list[dict[str, Any]], limit: int, as_json: bool) -> None:
    shown = rows[:limit]
    if as_json:
        for row in shown:
            console.print(json.dumps(row, default=str), highlight=False, soft_wrap=True)
        return
    table = Table(*columns)
    for row in shown:
        table.add_row(*[_cell(row[c]) for c in columns])
    console.print(table)
    if len(rows) > limit:
        errors.print(f"(only the first {limit} rows; --limit to see more)")


def _cell(value: Any) -> str:
    return "null" if value is None else str(value)


def _first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
