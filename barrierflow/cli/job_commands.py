"""Commands to a job, as Flink's: ``savepoint`` (and ``savepoint --dispose``; ``savepoint info
PATH`` tells what one holds: ``state_commands.py``), ``stop`` and
``cancel`` to a running one, ``exceptions`` to a running or ended one. A job is found under its
checkpoint directory (``--checkpoint-dir``, else ``execution.checkpointing.dir`` of ``--conf``,
``-D`` or ``BARRIERFLOW_CONF``, which also give the storage's ``s3.*`` settings): a running
one through the address file its JobMaster keeps there, its exceptions in the file
``cluster.exception_history`` writes there.

``savepoint`` and ``stop`` end their output with the savepoint's path on a line of its own,
``Savepoint completed. Path: <path>``, and exit non-zero with the reason when it failed.
"""

from __future__ import annotations

import json
import time
from typing import Annotated

import pyarrow.fs as pafs
import typer

from barrierflow.api.configuration import Configuration
from barrierflow.checkpoint import storage_layout as layout
from barrierflow.checkpoint.storage import (
    CheckpointDirectory,
    FileSystemSavepointStorage,
    job_root_uri,
    locate_snapshot,
    resolve_filesystem,
)
from barrierflow.cli.app import app, console, errors, fail, time_of
from barrierflow.cli.job_lookup import JobPlace, job_place
from barrierflow.cli.rest_client import RestJob, base_url, request
from barrierflow.cli.state_commands import savepoint_info
from barrierflow.cli.storage_options import ConfFileOption, DynamicOption, configure
from barrierflow.cluster import job_master_client
from barrierflow.cluster.exception_history import read_exceptions
from barrierflow.cluster.job_status import JobException
from barrierflow.control import messages as msg
from barrierflow.errors import CorruptCheckpointError, StorageConfigError
from barrierflow.protocol.checkpoint_barrier import SnapshotFormat

CheckpointDirOption = Annotated[
    str | None,
    typer.Option(
        "--checkpoint-dir",
        help="The job's checkpoint directory (where its address is recorded); default "
        "execution.checkpointing.dir.",
    ),
]
FormatOption = Annotated[
    SnapshotFormat,
    typer.Option(
        "--type",
        case_sensitive=False,
        help="canonical: restorable into either state backend; native: the backend's own.",
    ),
]
WaitOption = Annotated[
    float, typer.Option("--wait-s", help="How long to wait for the savepoint and the job.")
]
HaDirOption = Annotated[
    str | None,
    typer.Option(
        "--ha-dir",
        help="A high-availability storage directory (high-availability.storageDir) whose job "
        "records name the job and its checkpoint directory.",
    ),
]
JobManagerOption = Annotated[
    str | None,
    typer.Option(
        "-m",
        "--jobmanager",
        help="HOST:PORT of the job's REST API, to reach it there (as Flink's --jobmanager).",
    ),
]
SecretOption = Annotated[
    str | None,
    typer.Option(
        "--secret",
        help="With -m: the job's secret (from its address file); default BARRIERFLOW_SECRET.",
    ),
]


class _RunningJob:
    """A running job's JobMaster, found through its address file."""

    def __init__(self, job_id: str, place: JobPlace) -> None:
        self.job_id = job_id
        self.storage = place.job_root
        address = job_master_client.read_address(self.storage)
        if address is None:
            raise fail(f"No running job {job_id} {place.where} ({self.storage.job_root_uri})")
        self.name = address["job_name"]
        self._endpoint = address["endpoint"]
        self.secret = address["secret"]
        # A driver killed outright leaves its address file behind; asked there, a request
        # would wait its whole timeout (15 minutes for a savepoint) for nobody.
        wait_s = job_master_client.PING_TIMEOUT_S
        if job_master_client.ask(self._endpoint, msg.PingJob(0, job_id), wait_s) is None:
            raise fail(
                f"Job {job_id} ({self.name}) does not answer at {self._endpoint} within "
                f"{wait_s:g} s: its driver probably died and left its address file behind, or "
                f"a resumed driver has not started yet. Resume it with `barrierflow run PROGRAM "
                f"--resume {job_id}`, or try again once it runs"
            )

    def ask(self, request: msg.Message, timeout_s: float) -> msg.AnyMessage:
        ping = msg.PingJob(0, self.job_id)
        try:
            reply = job_master_client.ask(self._endpoint, request, timeout_s, ping)
        except job_master_client.JobMasterGone:
            raise fail(
                f"The JobMaster of job {self.job_id} at {self._endpoint} stopped answering "
                f"before it replied: the job ended or its driver died (`barrierflow list` "
                f"shows which)"
            ) from None
        if reply is None:
            raise fail(f"The JobMaster of job {self.job_id} at {self._endpoint} did not answer")
        return reply

    def cancel(self) -> None:
        reply = self.ask(msg.CancelJob(0, self.job_id, self.secret), timeout_s=10)
        if not (isinstance(reply, msg.CancelJobReply) and reply.accepted):
            raise fail(f"Cancel refused: {getattr(reply, 'reason', reply)}")

    def savepoint(
        self,
        target_dir: str | None,
        snapshot_format: SnapshotFormat,
        wait_s: float,
        stop: bool = False,
        drain: bool = False,
    ) -> str:
        request = msg.TriggerSavepoint(
            0, self.job_id, self.secret, target_dir or "", snapshot_format, stop, drain
        )
        reply = self.ask(request, wait_s)
        if not isinstance(reply, msg.SavepointReply) or reply.path is None:
            raise fail(f"Savepoint failed: {getattr(reply, 'error', reply)}")
        return reply.path

    def wait_until_ended(self, wait_s: float) -> None:
        deadline = time.monotonic() + wait_s
        while self.storage.read_small_file(layout.JOBMASTER_ADDRESS_FILE) is not None:
            if time.monotonic() > deadline:
                raise fail(f"Job {self.job_id} has not ended after {wait_s:g} s")
            time.sleep(0.2)


def running_job(
    job_id: str,
    configuration: Configuration,
    checkpoint_dir: str | None,
    ha_dir: str | None,
    jobmanager: str | None,
    secret: str | None,
) -> _RunningJob | RestJob:
    """The running job, reached through its REST API (``-m``) or its address file."""
    if jobmanager:
        return RestJob(jobmanager, job_id, secret)
    return _RunningJob(job_id, job_place(job_id, checkpoint_dir, configuration, ha_dir=ha_dir))


def _print_savepoint(path: str) -> None:
    console.print(f"Savepoint completed. Path: {path}", highlight=False, soft_wrap=True)


@app.command()
def savepoint(
    job_id: Annotated[
        str | None,
        typer.Argument(help="The id of a running job; or `info`, then a savepoint's path."),
    ] = None,
    target_dir: Annotated[
        str | None,
        typer.Argument(help="Where to write it; default execution.checkpointing.savepoint-dir."),
    ] = None,
    snapshot_format: FormatOption = SnapshotFormat.CANONICAL,
    checkpoint_dir: CheckpointDirOption = None,
    ha_dir: HaDirOption = None,
    jobmanager: JobManagerOption = None,
    secret: SecretOption = None,
    dispose: Annotated[
        str | None,
        typer.Option("--dispose", "-d", help="Delete this savepoint (its directory) instead."),
    ] = None,
    wait_s: WaitOption = 900,
    as_json: Annotated[bool, typer.Option("--json", help="With info: print JSON.")] = False,
    conf_file: ConfFileOption = None,
    dynamic: DynamicOption = None,
) -> None:
    """Take a savepoint of a running job (it goes on), or dispose of one; `savepoint info PATH`
    prints what a savepoint (or checkpoint) holds: per operator and state, its parallelism,
    max parallelism, kind, declared type, backend, format and size."""
    configuration = configure(conf_file, dynamic)
    if job_id == "info":  # never a job id: those are hexadecimal
        if target_dir is None:
            raise fail("Which savepoint? `barrierflow savepoint info PATH`", 2)
        savepoint_info(target_dir, as_json)
        return
    if dispose is not None:
        _dispose(dispose)
        return
    if job_id is None:
        raise fail("Which job? Give its id (or --dispose PATH)", 2)
    job = running_job(job_id, configuration, checkpoint_dir, ha_dir, jobmanager, secret)
    errors.print(f"Triggering a savepoint of job {job_id} ({job.name})...")
    _print_savepoint(job.savepoint(target_dir, snapshot_format, wait_s))


def _dispose(path: str) -> None:
    """Deletes a savepoint's directory, after checking that it is one."""
    try:
        root, metadata = locate_snapshot(path)
    except (CorruptCheckpointError, StorageConfigError) as e:
        raise fail(f"Not disposing of {path}: it is not a readable savepoint ({e})") from e
    if not metadata.is_savepoint:
        raise fail(
            f"Not disposing of {path}: it holds checkpoint {metadata.checkpoint_id} of job "
            f"{metadata.job_id}, not a savepoint; a job deletes its own checkpoints"
        )
    FileSystemSavepointStorage().discard(root)
    console.print(
        f"Disposed of savepoint {metadata.checkpoint_id} of job {metadata.job_name}: {root}"
    )


@app.command()
def stop(
    job_id: Annotated[str, typer.Argument(help="The id of a running job.")],
    savepoint_path: Annotated[
        str | None,
        typer.Option(
            "--savepoint-path",
            "-p",
            help="Where to write the savepoint; default execution.checkpointing.savepoint-dir.",
        ),
    ] = None,
    snapshot_format: FormatOption = SnapshotFormat.CANONICAL,
    drain: Annotated[
        bool,
        typer.Option(
            "--drain",
            "-d",
            help="End the input first, so that operators flush what they buffer.",
        ),
    ] = False,
    checkpoint_dir: CheckpointDirOption = None,
    ha_dir: HaDirOption = None,
    jobmanager: JobManagerOption = None,
    secret: SecretOption = None,
    wait_s: WaitOption = 900,
    conf_file: ConfFileOption = None,
    dynamic: DynamicOption = None,
) -> None:
    """Stop a running job with a savepoint; a job started from it goes on where it stopped.

    The sources stop at the savepoint, the sinks commit up to it, and the job ends (FINISHED).
    """
    configuration = configure(conf_file, dynamic)
    job = running_job(job_id, configuration, checkpoint_dir, ha_dir, jobmanager, secret)
    how = "draining its input first" if drain else "at a savepoint"
    errors.print(f"Stopping job {job_id} ({job.name}), {how}...")
    path = job.savepoint(savepoint_path, snapshot_format, wait_s, stop=True, drain=drain)
    job.wait_until_ended(wait_s)
    errors.print(f"Job {job_id} stopped")
    _print_savepoint(path)


@app.command()
def cancel(
    job_id: Annotated[str, typer.Argument(help="The id of a running job.")],
    target_dir: Annotated[
        str | None,
        typer.Argument(help="With -s: where to write the savepoint."),
    ] = None,
    with_savepoint: Annotated[
        bool,
        typer.Option(
            "-s",
            "--with-savepoint",
            help="Take a savepoint first (deprecated in Flink: prefer stop).",
        ),
    ] = False,
    checkpoint_dir: CheckpointDirOption = None,
    ha_dir: HaDirOption = None,
    jobmanager: JobManagerOption = None,
    secret: SecretOption = None,
    wait_s: WaitOption = 60,
    conf_file: ConfFileOption = None,
    dynamic: DynamicOption = None,
) -> None:
    """Cancel a running job; its checkpoints follow the externalized retention setting."""
    if target_dir is not None and not with_savepoint:
        raise fail(f"A target directory ({target_dir}) goes with -s", 2)
    configuration = configure(conf_file, dynamic)
    job = running_job(job_id, configuration, checkpoint_dir, ha_dir, jobmanager, secret)
    path = None
    if with_savepoint:
        errors.print(f"Triggering a savepoint of job {job_id} ({job.name})...")
        path = job.savepoint(target_dir, SnapshotFormat.CANONICAL, max(wait_s, 900))
    job.cancel()
    console.print(f"Canceling job {job_id} ({job.name})...")
    job.wait_until_ended(wait_s)
    console.print(f"Job {job_id} canceled")
    if path is not None:
        _print_savepoint(path)


@app.command()
def exceptions(
    job_id: Annotated[str, typer.Argument(help="The id of a job, running or ended.")],
    checkpoint_dir: Annotated[
        str | None,
        typer.Option(
            "--checkpoint-dir",
            help="The job's checkpoint directory (where its exceptions are recorded); default "
            "execution.checkpointing.dir.",
        ),
    ] = None,
    ha_dir: HaDirOption = None,
    jobmanager: JobManagerOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
    conf_file: ConfFileOption = None,
    dynamic: DynamicOption = None,
) -> None:
    """Show the failures of a job's attempts, newest first, with the task's traceback (Flink's
    exceptions tab), from the history its JobMaster keeps in the job's checkpoint directory:
    also after the job ended."""
    configuration = configure(conf_file, dynamic)
    if jobmanager:
        history = request(f"{base_url(jobmanager)}/jobs/{job_id}/exceptions")
        newest_first = tuple(
            JobException(e["timestamp"], e.get("attempt", 0), e["message"], e["stacktrace"])
            for e in history.get("exceptionHistory", {}).get("entries", [])
        )
        _print_exceptions(job_id, newest_first, as_json)
        return
    if checkpoint_dir or configuration.get("execution.checkpointing.dir"):
        storage = _job_storage(
            job_id, checkpoint_dir or configuration.get("execution.checkpointing.dir")
        )
    else:
        storage = job_place(job_id, None, configuration, ha_dir=ha_dir, running=False).job_root
    try:
        history = read_exceptions(storage)
    except CorruptCheckpointError as e:
        raise fail(
            f"Cannot show the exceptions of job {job_id}: {e} (the console output of its run "
            "has them too)"
        ) from e
    except OSError as e:
        raise fail(
            f"Cannot read the exceptions of job {job_id} in {storage.job_root_uri}: {e}; "
            "check that the storage is reachable and readable with these settings"
        ) from e
    _print_exceptions(job_id, tuple(reversed(history or ())), as_json)


def _print_exceptions(job_id: str, newest_first: tuple[JobException, ...], as_json: bool) -> None:
    if as_json:
        console.print_json(json.dumps([_exception_json(e) for e in newest_first]))
    elif not newest_first:
        console.print(f"Job {job_id} recorded no exception.", markup=False, highlight=False)
    else:  # a traceback holds brackets: no markup
        text = _exceptions_text(job_id, newest_first)
        console.print(text, markup=False, highlight=False, soft_wrap=True)


def _job_storage(job_id: str, directory: str) -> CheckpointDirectory:
    """The job's root under ``directory``; an unknown job ends the command (exit code 2)."""
    uri = job_root_uri(directory, job_id)
    try:
        fs, path = resolve_filesystem(uri)
        found = fs.get_file_info(path).type != pafs.FileType.NotFound
    except (StorageConfigError, OSError) as e:
        raise fail(
            f"Cannot read {uri}: {e}; check the checkpoint directory and its s3.* settings", 2
        ) from e
    if not found:
        raise fail(
            f"No job {job_id} under {directory}: {uri} does not exist. Check the job id (the "
            f"console of barrierflow run names it: Job NAME (ID) ...) and the job's checkpoint "
            f"directory (--checkpoint-dir)",
            2,
        )
    return CheckpointDirectory(uri)


def _exception_json(exception: JobException) -> dict[str, object]:
    return {
        "timestamp_ms": exception.timestamp_ms,
        "time": time_of(exception.timestamp_ms),
        "attempt": exception.attempt,
        "error": exception.error,
        "traceback": exception.traceback,
    }


def _exceptions_text(job_id: str, newest_first: tuple[JobException, ...]) -> str:
    """Each exception: its time, attempt and error line, then the task's traceback indented
    (the whole error where there is no traceback)."""
    count = len(newest_first)
    lines = [f"Job {job_id} recorded {count} exception{'' if count == 1 else 's'}, newest first:"]
    for e in newest_first:
        headline, *rest = e.error.splitlines() or ["(no message)"]
        details = e.traceback.splitlines() if e.traceback else rest
        lines += ["", f"{time_of(e.timestamp_ms)}  attempt {e.attempt}  {headline}"]
        lines += [f"    {line}" if line else "" for line in details]
    return "\n".join(lines)
