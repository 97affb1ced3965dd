"""Internal: submission, a job's pipeline planned, checked and handed to an executor (Flink's
client); a program submits through ``barrierflow.datastream.StreamExecutionEnvironment``
(docs/public-api.md).

The environment (``api/environment.py``) declares a job and, at ``execute()``, builds its
``Pipeline`` (``pipeline.py``: plain values, no I/O) and gives it to its ``JobSubmitter``
(``submitter.py``), which

- applies the submission context (``submission_context.py``: what ``barrierflow run`` was
  told, installed around the job file);
- plans the job (``planning.py``: graphs, defaults, storage checks, the snapshot to restore,
  read by ``restore_points.py``; the result is the ``JobPlan`` of ``cluster/job_plan.py``);
- checks it (``job_checks.py``: the restored state fits, the connectors' settings work), or
  stops there with a report (``dry_run.py``);
- hands it to an executor (``executor.py``: ``JobExecutor``; ``spark_executor.py``; threads
  in ``barrierflow/testing/thread_deployer.py``), whose JobMaster ``execute()`` runs.

What belongs here, never in the environment: driver high availability (leader election, the
lease and its epoch, HA services in the storage directory), the job registry, and the
rescaling of a running job. The environment declares a job and hands over its pipeline; it
knows nothing of clusters, of leaders or of jobs that ran before.
"""
