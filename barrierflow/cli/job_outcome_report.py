"""What ``barrierflow run`` prints, and the status it exits with, when a job file did not end
well: each kind of ending says what it is, in its own words and with its own exit status, so
that a supervisor (systemd, a Kubernetes operator, YARN) and a person can tell them apart.

| exit | ending |
| --- | --- |
| 0 | the job finished (or, under high availability, had finished before) |
| 1 | the job failed, or the job file raised an error |
| 2 | bad configuration or command line |
| 3 | the job was canceled |
| 4 | the JobMaster lost its leadership: another driver goes on with the job |

An error the job file raised (while building the job too: ``key_by`` on a bad field) keeps its
type, its message and the user's line that led to it; ``--verbose`` adds the whole traceback.
Performs no I/O.
"""

from __future__ import annotations

import os
import traceback
from dataclasses import dataclass
from pathlib import Path

from barrierflow.client.ha.job_leadership import JobEndedError
from barrierflow.client.ha.records import JobState
from barrierflow.errors import (
    ConfigurationError,
    JobCanceledError,
    JobExecutionError,
    LeadershipLostError,
)

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_CANCELED = 3
EXIT_LEADERSHIP_LOST = 4

_OURS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the barrierflow package
_CHAINED = "\nThe above exception was the direct cause of the following exception:\n"


@dataclass(frozen=True)
class Outcome:
    message: str
    exit_status: int


def outcome_of(error: BaseException, job_file: Path, verbose: bool) -> Outcome:
    """How ``barrierflow run`` reports ``error``, raised by running ``job_file``."""
    if isinstance(error, JobCanceledError):
        return Outcome(_capitalized(str(error)) + ".", EXIT_CANCELED)
    if isinstance(error, LeadershipLostError):
        return Outcome(
            f"Job suspended: this driver {error}. It stopped its Spark stage and committed "
            "nothing more; the new leader goes on with the job.",
            EXIT_LEADERSHIP_LOST,
        )
    if isinstance(error, JobEndedError):
        status = {
            JobState.FINISHED: 0,
            JobState.CANCELED: EXIT_CANCELED,
        }.get(error.record.state, EXIT_FAILED)
        return Outcome(_capitalized(str(error)), status)
    if isinstance(error, JobExecutionError):
        return Outcome(_failure_report(error), EXIT_FAILED)
    status = EXIT_USAGE if isinstance(error, ConfigurationError) else EXIT_FAILED
    return Outcome(_job_file_error(error, job_file, verbose), status)


def _capitalized(text: str) -> str:
    return text[0].upper() + text[1:] if text else text


def _failure_report(error: JobExecutionError) -> str:
    """The job's error once, then where it came from: the first exception of the task's
    traceback chain, which for a failing user function is the user's own code; barrierflow's
    frames around it are logged (``--verbose`` shows them)."""
    text = str(error)
    headline = text.removesuffix(f"\n\nTask traceback:\n{error.remote_traceback}")
    if not error.remote_traceback:
        return f"Job failed: {headline}"
    cause = error.remote_traceback.split(_CHAINED)[0].rstrip()
    return f"Job failed: {headline}\n\nIn the task:\n{cause}"


def _job_file_error(error: BaseException, job_file: Path, verbose: bool) -> str:
    """``error``'s type and message, and the deepest line of the user's own code in its
    traceback (the job file, or a module of the user's beside it); where barrierflow raised
    it, that place too. The whole traceback with ``--verbose``."""
    headline = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    frames = traceback.extract_tb(error.__traceback__)
    user = [f for f in frames if _is_users(f.filename, job_file)]
    if frames and user and frames[-1] is user[-1]:
        where = f"Error in job file {job_file}: {headline}"
    else:
        where = f"Job failed: {headline}"
        if frames and not isinstance(error, ConfigurationError):
            inner = frames[-1]
            where += f"\n  raised in {inner.filename}, line {inner.lineno}, in {inner.name}"
    if verbose:
        trace = "".join(traceback.format_exception(error)).rstrip()
        return f"{where}\n\n{trace}"
    if not user:
        return f"{where}\n(--verbose shows the traceback)"
    frame = user[-1]
    line = f"\n    {frame.line}" if frame.line else ""
    return (
        f'{where}\n  File "{frame.filename}", line {frame.lineno}, in {frame.name}{line}\n'
        "(--verbose shows the whole traceback)"
    )


def _is_users(filename: str, job_file: Path) -> bool:
    """A frame of the user's: the job file, or code that is neither barrierflow's, nor
    Python's, nor an installed package's."""
    path = os.path.abspath(filename)
    if path == os.path.abspath(job_file):
        return True
    if path.startswith(_OURS + os.sep) or "site-packages" in path or filename.startswith("<"):
        return False
    return not path.startswith(os.path.dirname(os.__file__) + os.sep)
