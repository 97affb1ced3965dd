"""What a campaign run's job program is given (``JobSpec``) and what it reports back
(``RunReport``), as JSON files: the program runs in a ``barrierflow run`` process of its own.

Performs no I/O beyond the files it is asked to read or write.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class JobSpec:
    job: str  # a name of catalog.JOBS
    backend: str  # "hashmap", or "rocksdb" (incremental checkpoints, local recovery)
    n: int  # input records
    base: str  # the run's directory: output, local state, reports
    checkpoint_dir: str  # a path, or s3://bucket/prefix
    s3: dict[str, object] = field(default_factory=dict)  # s3.* keys when on S3
    kafka: str | None = None  # bootstrap servers
    in_topic: str | None = None
    out_topic: str | None = None
    postgres: str | None = None  # conninfo of the run's database
    storage_faults: str | None = None  # the storage fault facility's control directory
    channel_cuts: str | None = None  # the channel fault facility's control directory
    poison: int | None = None  # a record that makes a user function raise
    inline_threshold: int | None = None  # small: state goes to files (a file to corrupt)
    restarts: int = 12
    restart_delay_ms: int = 200
    checkpoint_timeout_ms: int = 3000
    delay_s: float = 0.0004  # per record, so that the job lasts while faults fall
    checkpoint_interval_ms: int | None = None  # None: the job's own

    def dump(self, path: str) -> None:
        with open(path, "w") as f:
            json.dump(asdict(self), f)

    @staticmethod
    def load(path: str) -> JobSpec:
        with open(path) as f:
            return JobSpec(**json.load(f))


@dataclass(frozen=True)
class Recovery:
    """One attempt that restored a checkpoint after a failure: epoch seconds of the failure
    the JobMaster saw, the attempt's submission, its first record processed and its first
    checkpoint completed (None: none before it ended)."""

    attempt: int
    checkpoint_id: int
    failed_at: float | None
    submitted_at: float
    first_record_at: float | None
    first_checkpoint_at: float | None


@dataclass(frozen=True)
class RunReport:
    """What one driver process of a run reports once its job ended well."""

    job_id: str
    attempts: int
    recoveries: list[Recovery]

    def dump(self, path: str) -> None:
        with open(path, "w") as f:
            json.dump(asdict(self), f)

    @staticmethod
    def load(path: str) -> RunReport:
        with open(path) as f:
            data = json.load(f)
        return RunReport(
            data["job_id"], data["attempts"], [Recovery(**r) for r in data["recoveries"]]
        )
