"""Internal: the JobMaster (attempts, savepoints, restart strategies, REST, web UI and metrics)
and Spark. Its public names (how a job ends: ``JobStatus``, ``JobExecutionResult``) are in
``barrierflow.common``, its errors in ``barrierflow.errors`` (docs/public-api.md)."""
