"""Internal: Spark: the context a job runs on, its JVM started early by ``barrierflow run``, the
barrier stage of a job's slots and the session's table catalog. No public names
(docs/public-api.md)."""
