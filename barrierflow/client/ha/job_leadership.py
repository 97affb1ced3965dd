"""A job under high availability: the program waits until it leads its cluster id, then runs
the job the cluster id runs, as the job's next driver, and acts for it only while it leads.

``lead`` is the submission step (``client/submitter.py`` calls it before planning):

1. the settings, checked before anything starts: ``high-availability.storageDir`` set and
   writable, a cluster id (``high-availability.cluster-id``, or the job's name);
2. leader election: as a standby, wait (and say so) until the lease is free; take the next
   epoch; renew it from then on;
3. the job record (``job.json``): none yet, a new job is recorded under a new id; else the
   program must be the same job (its name), not one that ended, and it goes on as that job:
   its retained checkpoints are taken over, the latest restored (or the savepoint it started
   from, if it has none yet);
4. the ``Leadership`` the JobMaster checks before every write, deletion and commit
   notification, that reserves checkpoint ids in the lease, and that records the job's end and
   hands the lease back.

**Threading:** ``lead`` on the submitting thread; a ``JobLeadership`` as ``Leadership`` says.
**I/O:** the HA storage.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import msgspec

from barrierflow.checkpoint.storage_layout import JOB_RECORD_FILE, epoch_file, parse_epoch_file
from barrierflow.client.ha.ha_files import HaFiles, ha_files
from barrierflow.client.ha.leader_election import LeaderElection
from barrierflow.client.ha.lease import Observation
from barrierflow.client.ha.records import JobRecord, JobState, LeaseRecord, decode, encode
from barrierflow.client.pipeline import Options, Pipeline
from barrierflow.coordination.leadership import JobEnd
from barrierflow.errors import ConfigurationError, LeadershipLostError, StorageConfigError

log = logging.getLogger("barrierflow.ha")

_CLUSTER_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
EARLIER_EPOCHS_READ = 3  # whose checkpoint id reservations a new leader starts past


@dataclass(frozen=True)
class HaSettings:
    storage_dir: str
    cluster_id: str
    lease_duration_s: float


def ha_settings(configuration: Options, job_name: str) -> HaSettings | None:
    """The high-availability settings, or None when it is off; a ``ConfigurationError``
    naming the key for a bad one."""
    if configuration.get("high-availability.type") == "none":
        return None
    storage_dir = configuration.get("high-availability.storageDir")
    if not storage_dir:
        raise ConfigurationError(
            "high-availability.type is filesystem but high-availability.storageDir is not set: "
            "set it to a directory every driver of the job reaches (file:// on a shared disk, "
            "or s3://)"
        )
    if storage_dir.startswith("-"):
        raise ConfigurationError(
            f"high-availability.storageDir {storage_dir!r} starts with '-': an option, not a path"
        )
    cluster_id = configuration.get("high-availability.cluster-id")
    if cluster_id is None:
        cluster_id = re.sub(r"[^A-Za-z0-9._-]+", "-", job_name).strip("-._")[:128] or "default"
        log.info("high-availability.cluster-id is not set: the job's name makes it, %r", cluster_id)
    elif not _CLUSTER_ID.match(cluster_id):
        raise ConfigurationError(
            f"high-availability.cluster-id {cluster_id!r}: letters, digits, '.', '_' and '-', "
            "starting with a letter or digit, at most 128 characters (it names a directory)"
        )
    duration_s = configuration.get("high-availability.filesystem.lease-duration") / 1000
    return HaSettings(storage_dir, cluster_id, duration_s)


class JobEndedError(Exception):
    """The cluster id's job ended before: a driver started again does not run it again."""

    def __init__(self, record: JobRecord) -> None:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.updated_ms / 1000))
        why = f": {record.failure}" if record.failure else ""
        super().__init__(
            f"job {record.job_name!r} ({record.job_id}) of cluster id {record.cluster_id!r} "
            f"already ended, {record.state.value} at {when}{why}. It does not run again under "
            "this cluster id: set a new high-availability.cluster-id to run the program as a "
            "new job"
        )
        self.record = record


def lead(
    pipeline: Pipeline,
    settings: HaSettings,
    while_standby: Callable[[], None] = lambda: None,
) -> tuple[Pipeline, JobLeadership]:
    """Waits until this program leads ``settings.cluster_id``; the pipeline to plan (the
    cluster id's job, taken over, or a new one) and the leadership to run it under.
    ``while_standby`` is called once, when the program first waits as a standby: a head start
    that must not act for the job (it writes nothing the job's leader owns)."""
    files = ha_files(settings.storage_dir, settings.cluster_id)
    _check_writable(files)
    election = LeaderElection(files, settings.lease_duration_s)
    waited: list[bool] = []

    def on_standby(seen: Observation) -> None:
        _say_standby(settings, seen)
        if not waited:
            waited.append(True)
            while_standby()

    epoch = election.acquire(on_standby=on_standby)
    leadership = JobLeadership(files, election, settings)
    try:
        leadership.start(lambda e: log.error("%s", e))  # renewing while the job is planned
        record = leadership.read_job()
        if record is None:
            job_id = pipeline.resume_job_id or uuid.uuid4().hex
            leadership.record_new_job(pipeline, job_id)
            return dataclasses.replace(pipeline, job_id=job_id, leader_epoch=epoch), leadership
        _check_same_job(record, pipeline)
        log.info(
            "Cluster %s: epoch %d goes on with job %s (%s)",
            settings.cluster_id,
            epoch,
            record.job_name,
            record.job_id,
        )
        taken_over = dataclasses.replace(
            pipeline,
            job_id=record.job_id,
            take_over=True,
            resume_job_id=None,
            restore_path=None,  # the job's own directory records what it started from
            leader_epoch=epoch,
        )
        return taken_over, leadership
    except BaseException:
        leadership.abandon()
        raise


def _check_writable(files: HaFiles) -> None:
    probe = f".probe-{uuid.uuid4().hex}"
    try:
        files.replace(probe, b"")
    except OSError as e:
        raise StorageConfigError(
            f"high-availability.storageDir: cannot write to {files.uri}: {e}"
        ) from e
    files.delete(probe)


def _say_standby(settings: HaSettings, seen: Observation) -> None:
    log.warning(
        "Standby for cluster id %s: %s. This program runs the job when the lease is free "
        "(%g s without a renewal, or its holder gone); it waits.",
        settings.cluster_id,
        seen.reason,
        settings.lease_duration_s,
    )


def _check_same_job(record: JobRecord, pipeline: Pipeline) -> None:
    if record.job_name != pipeline.job_name:
        raise ConfigurationError(
            f"high-availability.cluster-id {record.cluster_id!r} runs job {record.job_name!r} "
            f"({record.job_id}); this program's job is {pipeline.job_name!r}. Two jobs cannot "
            "share a cluster id: give this one its own"
        )
    if record.state.ended:
        raise JobEndedError(record)
    if record.checkpoint_storage != pipeline.checkpointing.storage:
        was = record.checkpoint_storage or "the default directory"
        raise ConfigurationError(
            f"job {record.job_name!r} ({record.job_id}) of high-availability.cluster-id "
            f"{record.cluster_id!r} keeps its checkpoints under {was}; this program sets "
            f"{pipeline.checkpointing.storage or 'the default directory'}. Set it back to take "
            "the job over, or use a new cluster id"
        )


class JobLeadership:
    """A JobMaster's ``Leadership`` under high availability (``coordination/leadership.py``)."""

    def __init__(self, files: HaFiles, election: LeaderElection, settings: HaSettings) -> None:
        self._files = files
        self._election = election
        self._settings = settings
        self._on_lost: Callable[[LeadershipLostError], None] = lambda e: None
        self._renewing = False
        self.leading_since_ms = int(time.time() * 1000)
        self.first_checkpoint_id = self._past_earlier_reservations()

    @property
    def epoch(self) -> int:
        return self._election.epoch

    @property
    def cluster_id(self) -> str:
        return self._settings.cluster_id

    def check(self, action: str) -> None:
        self._election.check(action)

    def reserve_checkpoint_ids(self, up_to: int) -> None:
        self._election.reserve_checkpoint_ids(up_to)

    def start(self, on_lost: Callable[[LeadershipLostError], None]) -> None:
        self._on_lost = on_lost
        if not self._renewing:
            self._renewing = True
            self._election.start_renewing(lambda e: self._on_lost(e))
        elif not self._election.valid():
            on_lost(self._election.lost("it stops acting for the job"))

    def job_ended(self, end: JobEnd, failure: str | None) -> None:
        """Records the end in the job record (a driver started again does not run the job
        again), then hands the lease back: a standby of the cluster id need not wait."""
        record = self.read_job()
        if record is not None:
            try:
                self.check(f"record that the job ended ({end.value})")
                self._write_job(
                    msgspec.structs.replace(record, state=JobState(end.value), failure=failure)
                )
            except (LeadershipLostError, OSError) as e:
                log.warning("Could not record the job's end in %s: %s", self._files.uri, e)
        self._election.release()

    def abandon(self) -> None:
        """The job will not run (a refused program): the lease is handed back, nothing else."""
        self._election.release()

    # --- the job record -------------------------------------------------------------------

    def read_job(self) -> JobRecord | None:
        data = self._files.read(JOB_RECORD_FILE)
        if data is None:
            return None
        return decode(data, JobRecord, f"{self._files.uri}/{JOB_RECORD_FILE}")

    def record_new_job(self, pipeline: Pipeline, job_id: str) -> None:
        now = int(time.time() * 1000)
        record = JobRecord(
            cluster_id=self._settings.cluster_id,
            job_id=job_id,
            job_name=pipeline.job_name,
            operator_uids=sorted({t.uid for t in pipeline.reach() if t.uid}),
            checkpoint_storage=pipeline.checkpointing.storage,
            started_from=pipeline.restore_path,
            epoch=self.epoch,
            created_ms=now,
            updated_ms=now,
        )
        self.check("record the job")
        if not self._files.create(JOB_RECORD_FILE, encode(record)):
            raise LeadershipLostError(
                self.epoch, None, "another leader recorded the cluster id's job first"
            )

    def _write_job(self, record: JobRecord) -> None:
        updated = msgspec.structs.replace(
            record, epoch=self.epoch, updated_ms=int(time.time() * 1000)
        )
        self._files.replace(JOB_RECORD_FILE, encode(updated))

    # --- checkpoint ids ---------------------------------------------------------------------

    def _past_earlier_reservations(self) -> int:
        """The first checkpoint id after every id the last few epochs reserved: a paused
        leader of an earlier epoch may have used any of them."""
        epochs = sorted(
            e
            for e in map(parse_epoch_file, self._files.list(epoch_file(0).split("/", 1)[0]))
            if e is not None and e < self.epoch
        )[-EARLIER_EPOCHS_READ:]
        reserved = [1]
        for e in epochs:
            data = self._files.read(epoch_file(e))
            if data is not None:
                record = decode(data, LeaseRecord, f"{self._files.uri}/{epoch_file(e)}")
                reserved.append(record.reserved_checkpoint_ids)
        return max(reserved)
