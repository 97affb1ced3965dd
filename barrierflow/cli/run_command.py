"""``barrierflow run``: runs a job file with the options given on the command line, or, with
``--dry-run``, only plans it and tells what a restore would do. On a terminal, a status line
(``status_line``) shows the running job under its log."""

from __future__ import annotations

import contextlib
import logging
import os
import runpy
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.logging import RichHandler

from barrierflow.api.configuration import Configuration
from barrierflow.cli.app import app, console, errors, fail
from barrierflow.cli.job_outcome_report import outcome_of
from barrierflow.cli.status_line import StatusLine
from barrierflow.client.dry_run import DryRunFinished
from barrierflow.client.submission_context import SubmissionContext, installed
from barrierflow.cluster.spark import jvm_launch
from barrierflow.cluster.spark.session import default_spark_log, launch_jvm_early
from barrierflow.errors import ConfigurationError, JobExecutionError


@app.command()
def run(
    job: Annotated[Path, typer.Argument(help="A Python file that builds and executes a job.")],
    job_args: Annotated[
        list[str] | None,
        typer.Argument(
            help="Arguments of the job file (its sys.argv[1:]); after -- if any starts with a dash."
        ),
    ] = None,
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
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            "-v",
            help="Show Spark's own log and stack dumps on the console (default: in a log file "
            "whose path is printed) and barrierflow's debug lines.",
        ),
    ] = False,
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
    _log_to_console(verbose)
    status_line = _status_line(verbose)
    context = SubmissionContext(
        configuration=configuration,
        parallelism=parallelism,
        checkpoint_dir=checkpoint_dir or None,
        restore_path=restore_from or None,
        allow_non_restored_state=allow_non_restored_state,
        resume_job_id=resume or None,
        dry_run=dry_run,
        spark_master=master,
        spark_conf=spark_conf or None,
        verbose=verbose,
        # the job's environment hands it each JobMaster it builds
        on_job_master=status_line.follow if status_line is not None else None,
    )
    sys.argv = [str(job), *(job_args or [])]
    sys.path.insert(0, str(job.resolve().parent))
    early_jvm = not dry_run and _may_start_spark_early(job)
    if early_jvm:  # up by the time the job is built (the JVM takes over a second to start)
        launch_jvm_early(master, spark_conf, None if verbose else default_spark_log())
    try:
        # the status line is erased before the outcome prints
        with installed(context), status_line or contextlib.nullcontext():
            runpy.run_path(str(job), run_name="__main__")
    except DryRunFinished as e:
        console.print(e.report, highlight=False, soft_wrap=True)
        raise typer.Exit(0 if e.ok else 1) from None
    except Exception as e:
        if isinstance(e, JobExecutionError) and e.remote_traceback:
            logging.getLogger("barrierflow").debug("Task traceback:\n%s", e.remote_traceback)
        outcome = outcome_of(e, job, verbose)
        if outcome.exit_status == 0:
            console.print(outcome.message, highlight=False, soft_wrap=True, markup=False)
            raise typer.Exit(0) from e
        raise fail(outcome.message, outcome.exit_status) from e
    finally:
        if early_jvm:
            jvm_launch.stop_unused()
    if dry_run:  # the job file never called execute()
        raise fail("Dry run: the job file did not call execute(); nothing was planned")


def _may_start_spark_early(job: Path) -> bool:
    """Whether ``barrierflow run`` may start Spark's JVM before the job file runs: when the
    file calls ``execute`` (else no Spark is needed) and neither spark-submit started the JVM
    nor the file may build a session of its own, whose settings (memory, class path) must
    reach the JVM it starts. Reading the source errs on the side of starting late."""
    if os.environ.get("PYSPARK_GATEWAY_PORT"):
        return False
    source = job.read_text(errors="replace")
    return "execute" in source and not any(name in source for name in _OWN_SPARK)


_OWN_SPARK = ("SparkSession", "SparkContext", "SparkConf", "set_spark_session", "pyspark")


def _status_line(verbose: bool) -> StatusLine | None:
    """A status line when standard error is a terminal; none with ``--verbose``, whose Spark
    output reaches the terminal past rich and would tear the line apart."""
    if verbose or not errors.is_terminal:
        return None
    return StatusLine(errors, redirect_stdout=console.is_terminal)


def _log_to_console(verbose: bool) -> None:
    """barrierflow's lines on stderr: with times and colours on a terminal, one plain line per
    event otherwise (a log collector must not get lines wrapped at 80 columns)."""
    if errors.is_terminal:
        handler: logging.Handler = RichHandler(console=errors, show_path=False)
        handler.setFormatter(logging.Formatter("%(message)s", datefmt="[%X]"))
    else:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, handlers=[handler])
    for noisy in ("py4j", "kafka", "urllib3", "botocore", "boto3", "s3transfer"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
