"""Internal: the harnesses barrierflow's own tests run operators and tasks in, in-process, with no
Spark and no network; not a public API (docs/public-api.md)."""
