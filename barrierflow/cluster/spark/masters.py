"""What a Spark master URL says about where a job's processes run. Performs no I/O."""

from __future__ import annotations


def is_local_master(master: str) -> bool:
    """Spark's ``local``, ``local[N]``, ``local[*]`` and ``local[N,F]``: executors in this JVM,
    their Python workers on this machine."""
    return master == "local" or master.startswith("local[")
