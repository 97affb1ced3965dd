"""Running a job file as ``barrierflow run`` and ``barrierflow info`` do: as a script (its
``sys.argv``, its directory importable), its environments in the submission context the command
installed, and every way it can end turned into what the command prints and its exit status
(``job_outcome_report.py``).

**I/O:** whatever the job file does.
"""

from __future__ import annotations

import contextlib
import logging
import runpy
import sys
from pathlib import Path

import typer

from barrierflow.api.execution_plan import execution_plan
from barrierflow.cli.app import console, fail
from barrierflow.cli.job_outcome_report import outcome_of
from barrierflow.cli.status_line import StatusLine
from barrierflow.client.dry_run import DryRunFinished, PlanRequested
from barrierflow.client.submission_context import SubmissionContext, installed
from barrierflow.errors import JobExecutionError


def run_job_file(
    job: Path,
    job_args: list[str] | None,
    context: SubmissionContext,
    verbose: bool,
    status_line: StatusLine | None,
) -> None:
    """Runs ``job``; returns when it ended well, else ends the command with the outcome's
    message and exit status."""
    sys.argv = [str(job), *(job_args or [])]
    sys.path.insert(0, str(job.resolve().parent))
    try:
        # the status line is erased before the outcome prints
        with installed(context), status_line or contextlib.nullcontext():
            runpy.run_path(str(job), run_name="__main__")
    except DryRunFinished as e:
        console.print(e.report, highlight=False, soft_wrap=True)
        raise typer.Exit(0 if e.ok else 1) from None
    except PlanRequested as e:
        console.print(execution_plan(e.pipeline.stream_graph()), highlight=False, soft_wrap=True)
        raise typer.Exit(0) from None
    except Exception as e:
        if isinstance(e, JobExecutionError) and e.remote_traceback:
            logging.getLogger("barrierflow").debug("Task traceback:\n%s", e.remote_traceback)
        outcome = outcome_of(e, job, verbose)
        if outcome.exit_status == 0:
            console.print(outcome.message, highlight=False, soft_wrap=True, markup=False)
            raise typer.Exit(0) from e
        raise fail(outcome.message, outcome.exit_status) from e
