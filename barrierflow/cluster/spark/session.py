"""The SparkSession a job runs on: the active one; else one built from what spark-submit,
``spark-defaults.conf`` and ``barrierflow run --master/--conf`` say; else, with no master
configured anywhere, an embedded ``local[N]``.

Spark's Python workers start ``python3`` from the PATH unless told otherwise; an embedded
session is told to use this interpreter, so workers see the packages the driver sees.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Mapping

from barrierflow.errors import ConfigurationError

log = logging.getLogger("barrierflow.spark")

_EXECUTORS_WAIT_S = 60.0  # for executors to register before the slots are counted


def get_or_create_session(
    num_slots: int, master: str | None = None, conf: Mapping[str, str] | None = None
):
    """``master`` and ``conf`` (Spark settings) apply to a session this call builds."""
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        _check_slots(active, num_slots)
        return active
    configured = _configured_master(master, conf or {})
    if configured is not None:
        SparkContext._ensure_initialized()  # the JVM gateway: its system properties hold
        spark_conf = SparkConf()  # spark-submit's settings, read here
        for key, value in (conf or {}).items():
            spark_conf.set(key, value)
        spark_conf.setMaster(configured).setIfMissing("spark.app.name", "barrierflow")
        log.info("Connecting to Spark master %s", configured)
        session = SparkSession.builder.config(conf=spark_conf).getOrCreate()
        _check_slots(session, num_slots)
        return session
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    cores = max(num_slots, os.cpu_count() or 1)
    log.info("Starting an embedded Spark session local[%d]", cores)
    builder = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName("barrierflow")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.pyspark.python", os.environ["PYSPARK_PYTHON"])
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def _configured_master(master: str | None, conf: Mapping[str, str]) -> str | None:
    """The master given by ``--master``, a ``spark.master`` setting, spark-submit (which
    launched this process's JVM gateway) or ``spark-defaults.conf``; None: none at all."""
    if master:
        return master
    if conf.get("spark.master"):
        return conf["spark.master"]
    if os.environ.get("PYSPARK_GATEWAY_PORT"):  # started by spark-submit
        from pyspark import SparkConf, SparkContext

        SparkContext._ensure_initialized()
        return SparkConf().get("spark.master", None)
    return _spark_defaults().get("spark.master")


def _spark_defaults() -> dict[str, str]:
    """``spark-defaults.conf`` of ``SPARK_CONF_DIR`` or ``SPARK_HOME/conf``, if there is one."""
    conf_dir = os.environ.get("SPARK_CONF_DIR") or os.path.join(
        os.environ.get("SPARK_HOME", ""), "conf"
    )
    path = os.path.join(conf_dir, "spark-defaults.conf")
    settings: dict[str, str] = {}
    if os.environ.get("SPARK_CONF_DIR") or os.environ.get("SPARK_HOME"):
        try:
            with open(path) as f:
                for line in f:
                    parts = line.strip().split(None, 1)
                    if len(parts) == 2 and not parts[0].startswith("#"):
                        settings[parts[0]] = parts[1].strip()
        except OSError:
            pass
    return settings


def _check_slots(session, num_slots: int) -> None:
    """A barrier stage needs all its tasks running at once: refuse what cannot, rather than
    let Spark retry the stage for minutes."""
    sc = session.sparkContext
    master = sc.master
    conf = sc.getConf()
    if conf.get("spark.dynamicAllocation.enabled", "false").lower() == "true":
        raise ConfigurationError(
            "Spark dynamic allocation is on (spark.dynamicAllocation.enabled=true), which a "
            "barrier stage cannot run with; set it to false and give the job a fixed number "
            "of executors"
        )
    if master.startswith("local"):
        available = sc.defaultParallelism
        if available < num_slots:
            raise ConfigurationError(
                f"the job needs {num_slots} task slots (its highest parallelism) but the active "
                f"Spark session {master} has {available}; start it with local[{num_slots}] or "
                "lower the parallelism"
            )
        return
    deadline = time.monotonic() + _EXECUTORS_WAIT_S
    while True:
        available = _cluster_slots(sc)
        if available >= num_slots:
            return
        if time.monotonic() > deadline:
            raise ConfigurationError(
                f"the job needs {num_slots} task slots (its highest parallelism) at once, but "
                f"the executors of {master} offer {available} (their cores / spark.task.cpus) "
                f"after waiting {_EXECUTORS_WAIT_S:.0f} s for them; add executors or cores "
                "(--num-executors, --executor-cores, --total-executor-cores) or lower the "
                "parallelism"
            )
        time.sleep(0.5)


def _cluster_slots(sc) -> int:
    """Tasks the registered executors can run at once: what Spark's own barrier-stage check
    counts (``SparkContext.maxNumConcurrentTasks``)."""
    jsc = sc._jsc.sc()
    return jsc.maxNumConcurrentTasks(jsc.resourceProfileManager().defaultResourceProfile())


def network_hosts(session) -> tuple[str, str | None]:
    """(address the JobMaster binds, address slots bind or None for their own host's).

    Local masters keep everything on the loopback interface.
    """
    sc = session.sparkContext
    if sc.master.startswith("local"):
        return "127.0.0.1", "127.0.0.1"
    return sc.getConf().get("spark.driver.host"), None
