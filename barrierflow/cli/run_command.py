"""``barrierflow run``: runs a job file with the options given on the command line, or, with
``--dry-run``, only plans it and tells what a restore would do."""

from __future__ import annotations

import logging
import runpy
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.logging import RichHandler

from barrierflow.api import environment
from barrierflow.api.configuration import Configuration
from barrierflow.cli.app import app, console, errors, fail
from barrierflow.errors import ConfigurationError


@app.command()
def run(
    job: Annotated[Path, typer.Argument(help="A Python file that builds and executes a job.")],
    restore_from: Annotated[
        str | None,
        typer.Option(
            "-s",
            "--from",
            "--from-savepoint",
            help="Start from this savepoint or retained checkpoint (its directory or _metadata).",
        ),
    ] = None,
    allow_non_restored_state: Annotated[
        bool,
        typer.Option(
            "-n",
            "--allow-non-restored-state",
            help="Skip state of operators the job does not have (else an error naming them).",
        ),
    ] = False,
    claim_mode: Annotated[
        str | None,
        typer.Option(
            "--claim-mode",
            help="NO_CLAIM (default): never touch the snapshot; CLAIM: own it, delete it once "
            "subsumed.",
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Plan the job without starting Spark and print what the restore would do; "
            "exit non-zero if it would fail.",
        ),
    ] = False,
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
    master: Annotated[
        str | None,
        typer.Option(
            "--master",
            help="Spark master URL (spark://host:7077, yarn, k8s://..., local[4]), when no "
            "session is active; default: spark-submit's or spark-defaults.conf's, else an "
            "embedded local[N].",
        ),
    ] = None,
    conf: Annotated[
        list[str] | None,
        typer.Option(
            "--conf",
            help="A Spark setting key=value (as spark-submit's --conf; repeatable), or a YAML "
            "configuration file of Flink keys, over BARRIERFLOW_CONF.",
        ),
    ] = None,
    dynamic: Annotated[
        list[str] | None,
        typer.Option("-D", help="key=value, over --conf; repeatable (-D parallelism.default=4)."),
    ] = None,
) -> None:
    """Run JOB as a script whose environments take the options given here."""
    if not job.is_file():
        raise fail(f"No such job file: {job}", 2)
    try:
        configuration = Configuration.from_environment()
        spark_conf: dict[str, str] = {}
        for item in conf or []:
            if "=" in item:  # a Spark setting, as spark-submit takes it
                key, _, value = item.partition("=")
                spark_conf[key.strip()] = value.strip()
            else:
                configuration = configuration.merge(Configuration.from_yaml_file(item))
        configuration = configuration.merge(Configuration.from_dynamic_properties(dynamic or []))
        if claim_mode is not None:
            configuration.set("execution.state-recovery.claim-mode", claim_mode, "--claim-mode")
    except ConfigurationError as e:
        raise fail(f"Invalid configuration: {e}", 2) from e
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
    if allow_non_restored_state:
        overrides["allow_non_restored_state"] = True
    if dry_run:
        overrides["dry_run"] = True
    if resume:
        overrides["resume_job_id"] = resume
    if checkpoint_dir:
        overrides["checkpoint_dir"] = checkpoint_dir
    if parallelism:
        overrides["parallelism"] = parallelism
    if master:
        overrides["spark_master"] = master
    if spark_conf:
        overrides["spark_conf"] = spark_conf
    environment._cli_overrides.clear()
    environment._cli_overrides.update(overrides)
    sys.argv = [str(job)]
    sys.path.insert(0, str(job.resolve().parent))
    try:
        runpy.run_path(str(job), run_name="__main__")
    except environment.DryRunFinished as e:
        console.print(e.report, highlight=False, soft_wrap=True)
        raise typer.Exit(0 if e.ok else 1) from None
    except Exception as e:
        raise fail(f"Job failed: {e}") from e
    finally:
        environment._cli_overrides.clear()
    if dry_run:  # the job file never called execute()
        raise fail("Dry run: the job file did not call execute(); nothing was planned")
