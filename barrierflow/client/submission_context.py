"""The submission context: what ``barrierflow run`` was told, for the environments a job file
creates while it runs (Flink's CLI installs a context environment the same way).

``barrierflow run`` installs one around the job file (``with installed(context):``); an
environment created meanwhile takes it: the configuration under what the program's code sets,
the other options over it when the job is submitted.

**Threading:** the context is a ``contextvars`` variable: installed for the thread (or task)
that installs it; a thread started there begins without it.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

from barrierflow.client.pipeline import Options, Pipeline, check_job_id, check_parallelism

if TYPE_CHECKING:
    from barrierflow.client.executor import JobExecutor
    from barrierflow.cluster.job_master import JobMaster


@dataclass(frozen=True)
class SubmissionContext:
    """The command line's options; None (or False) where it gave none."""

    configuration: Options | None = None  # -D, --conf FILE, --claim-mode: under the code's
    parallelism: int | None = None  # the options from here on win over the program's own
    checkpoint_dir: str | None = None
    restore_path: str | None = None  # -s
    allow_non_restored_state: bool = False  # -n
    resume_job_id: str | None = None  # --resume
    dry_run: bool = False  # plan, report what a restore would do, run nothing
    plan_only: bool = False  # `barrierflow info`: stop at the declared job, show its plan
    spark_master: str | None = None  # for a SparkContext the job builds
    spark_conf: Mapping[str, str] | None = None
    verbose: bool = False  # Spark's log on the console rather than in a file
    # Given each JobMaster once built, before it runs (the command's status line reads its
    # ``status_view``); it must return at once.
    on_job_master: Callable[[JobMaster], None] | None = None
    # Where jobs run; None: on Spark, as spark_master and spark_conf say.
    executor: JobExecutor | None = None

    def over(self, pipeline: Pipeline) -> Pipeline:
        """``pipeline`` with this context's options in place of the program's."""
        changes: dict = {}
        if self.parallelism is not None:
            changes["parallelism"] = check_parallelism(self.parallelism)
        if self.checkpoint_dir is not None:
            changes["checkpointing"] = dataclasses.replace(
                pipeline.checkpointing, storage=self.checkpoint_dir
            )
        if self.restore_path is not None:
            changes["restore_path"] = self.restore_path
        if self.allow_non_restored_state:
            changes["allow_non_restored_state"] = True
        if self.resume_job_id is not None:
            changes["resume_job_id"] = check_job_id(self.resume_job_id)
        return dataclasses.replace(pipeline, **changes)


_NO_OPTIONS = SubmissionContext()
_CURRENT: ContextVar[SubmissionContext | None] = ContextVar(
    "barrierflow_submission_context", default=None
)


def current_submission_context() -> SubmissionContext:
    """The context installed here; outside ``barrierflow run``, one with no options."""
    return _CURRENT.get() or _NO_OPTIONS


@contextlib.contextmanager
def installed(context: SubmissionContext) -> Iterator[SubmissionContext]:
    """``context`` for the environments created inside the ``with`` block."""
    token = _CURRENT.set(context)
    try:
        yield context
    finally:
        _CURRENT.reset(token)
