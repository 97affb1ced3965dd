"""Internal: a job's graphs: transformations, StreamGraph, JobGraph (chaining) and
ExecutionGraph. No public names: programs build them through ``barrierflow.datastream``
(docs/public-api.md)."""
