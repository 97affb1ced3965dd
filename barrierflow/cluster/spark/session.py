"""The SparkSession a job runs on: the active one, or an embedded ``local[N]``.

Spark's Python workers start ``python3`` from the PATH unless told otherwise; an embedded
session is told to use this interpreter, so workers see the packages the driver sees.
"""

from __future__ import annotations

import logging
import os
import sys

from barrierflow.errors import ConfigurationError

log = logging.getLogger("barrierflow.spark")


def get_or_create_session(num_slots: int):
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        _check_slots(active, num_slots)
        return active
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    cores = max(num_slots, os.cpu_count() or 1)
    log.info("Starting an embedded Spark session local[%d]", cores)
    session = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName("barrierflow")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.pyspark.python", os.environ["PYSPARK_PYTHON"])
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session


def _check_slots(session, num_slots: int) -> None:
    sc = session.sparkContext
    master = sc.master
    if master.startswith("local"):
        available = sc.defaultParallelism
        if available < num_slots:
            raise ConfigurationError(
                f"the job needs {num_slots} task slots (its highest parallelism) but the active "
                f"Spark session {master} has {available}; start it with local[{num_slots}] or "
                "lower the parallelism"
            )


def network_hosts(session) -> tuple[str, str | None]:
    """(address the JobMaster binds, address slots bind or None for their own host's).

    Local masters keep everything on the loopback interface.
    """
    sc = session.sparkContext
    if sc.master.startswith("local"):
        return "127.0.0.1", "127.0.0.1"
    return sc.getConf().get("spark.driver.host"), None
