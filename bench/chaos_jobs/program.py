"""A campaign run's job, as a program for ``barrierflow run`` (so that its driver can be killed
and the job resumed with ``run --resume``):

    PYTHONPATH=.:bench barrierflow run bench/chaos_jobs/program.py -- SPEC.json

It builds the job ``SPEC.json`` names from ``tests/jobs``, with the campaign's settings: a
generous restart strategy, a short checkpoint timeout (a stalled storage must time out within
the run), two retained checkpoints (a corrupt one has a fallback), and, when asked, the storage
fault facility and the channel cuts installed. When the job ends well it writes a
``RunReport`` beside the spec.
"""

from __future__ import annotations

import os
import sys

from barrierflow.common import RestartStrategies
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.testing import channel_faults, storage_faults
from chaos_jobs.catalog import JOBS
from chaos_jobs.spec import JobSpec, Recovery, RunReport


def main(spec_path: str) -> None:
    spec = JobSpec.load(spec_path)
    if spec.storage_faults:
        storage_faults.install(spec.storage_faults)
    if spec.channel_cuts:
        channel_faults.install(spec.channel_cuts)
    env = StreamExecutionEnvironment().set_parallelism(2)
    conf: dict[str, object] = {**spec.s3}
    if spec.backend == "rocksdb":
        conf.update(
            {
                "execution.checkpointing.incremental": True,
                "execution.state-recovery.from-local": True,
                "taskmanager.state.local.root-dirs": os.path.join(spec.base, "local"),
            }
        )
    env.configure(conf)  # first: the S3 keys must be there when the job's storage is checked
    JOBS[spec.job].build(env, spec)
    env.configure(conf)
    env.set_restart_strategy(
        RestartStrategies.fixed_delay_restart(spec.restarts, spec.restart_delay_ms)
    )
    config = env.get_checkpoint_config()
    config.set_checkpoint_timeout(spec.checkpoint_timeout_ms)
    config.set_num_retained_checkpoints(2)
    if spec.checkpoint_interval_ms is not None:
        config.set_checkpoint_interval(spec.checkpoint_interval_ms)
    if spec.inline_threshold is not None:
        config.set_data_inline_threshold(spec.inline_threshold)
    result = env.execute(f"chaos-{spec.job}")
    recoveries = [
        Recovery(
            r.attempt,
            r.checkpoint_id,
            r.failed_at,
            r.submitted_at,
            r.first_record_at,
            r.first_checkpoint_at,
        )
        for r in getattr(result, "recoveries", ())
    ]
    report = RunReport(result.job_id, result.attempts, recoveries)
    report.dump(os.path.join(spec.base, f"report-{os.getpid()}.json"))


if __name__ == "__main__":
    main(sys.argv[1])
