"""The SparkContext a job runs on (and the SparkSession of ``barrierflow state query``): the
active one; else one built from what spark-submit, ``spark-defaults.conf`` and ``barrierflow
run --master/--conf`` say; else, with no master configured anywhere, an embedded ``local[N]``.

Spark's Python workers start ``python3`` from the PATH unless told otherwise; an embedded
session is told to use this interpreter, so workers see the packages the driver sees.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import threading
import time
from collections.abc import Mapping

from barrierflow.cluster.spark import jvm_launch
from barrierflow.cluster.spark.masters import is_local_master
from barrierflow.cluster.spark.slots import cluster_slots
from barrierflow.errors import ConfigurationError

log = logging.getLogger("barrierflow.spark")

_EXECUTORS_WAIT_S = 60.0  # for executors to register before the slots are counted
_early_context: threading.Thread | None = None  # create_local_context_early's
EARLY_CONTEXT_READY = "The SparkContext created while standing by"


def get_or_create_session(
    num_slots: int,
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    spark_log: str | None = None,
):
    """The active SparkSession, else one on ``get_or_create_context``'s SparkContext (whose
    SparkConf, ``spark.sql.*`` settings included, the session takes)."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        _check_slots(active.sparkContext, num_slots)
        return active
    get_or_create_context(num_slots, master, conf, spark_log)
    return SparkSession.builder.getOrCreate()


def get_or_create_context(
    num_slots: int,
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    spark_log: str | None = None,
):
    """The SparkContext of the active session or the active SparkContext, else a new one.

    A job needs the SparkContext alone: its barrier stage is an RDD job. Not building a
    SparkSession saves the seconds the JVM takes to set up Spark SQL (the start-up section of
    docs/benchmarks.md); a program that wants one gets it on this context
    (``SparkSession.builder.getOrCreate()``), with this context's settings.

    ``master`` and ``conf`` (Spark settings) apply to a context this call builds.
    ``spark_log``: a file that takes the output of a JVM this call starts (Spark's own log,
    and the Java and Python stack dumps of a failed barrier stage, which would bury
    barrierflow's one-line error on the console); None: the console. A JVM that spark-submit
    started logs as its log4j configuration says.
    """
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    _join_early_context()
    active = SparkSession.getActiveSession()
    existing = active.sparkContext if active is not None else SparkContext._active_spark_context
    if existing is not None:
        _check_slots(existing, num_slots)
        return existing
    jvm_launch.join_background_launch()  # the JVM ``barrierflow run`` started, if it did
    configured = _configured_master(master, conf or {})
    if configured is not None:
        log.info("Connecting to Spark master %s", configured)
    spark_conf = _context_conf(num_slots, configured, conf or {})
    if configured is None:
        log.info("Starting an embedded Spark session %s", spark_conf.get("spark.master"))
    if SparkContext._gateway is None and spark_log is not None:
        jvm_launch.launch(spark_conf, spark_log)
    context = SparkContext.getOrCreate(spark_conf)
    if configured is None and spark_log is None:
        context.setLogLevel("ERROR")
    if configured is not None:
        _check_slots(context, num_slots)
    return context


def create_local_context_early(
    num_slots: int,
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    spark_log: str | None = None,
) -> None:
    """Creates, in the background, the SparkContext ``get_or_create_context`` will return,
    and starts the Python workers its first barrier stage will reuse, when its master is
    embedded or local (this machine's memory and processes are all it holds); on a cluster's
    master, nothing. ``get_or_create_context`` waits for it; should it fail, that call
    creates the context again and raises what creating it raises."""
    global _early_context
    configured = _configured_master(master, conf or {})
    if configured is not None and not is_local_master(configured):
        return

    def create() -> None:
        try:
            from barrierflow.cluster.spark.deployment import start_python_workers

            context = get_or_create_context(num_slots, master, conf, spark_log)
            # PySpark's worker daemon, and a worker per slot with the task runtime imported,
            # idle in Spark's pool until the barrier stage takes them (or a minute passes)
            start_python_workers(context, num_slots)
            log.info("%s and its Python workers are ready for the job", EARLY_CONTEXT_READY)
        except Exception as e:  # noqa: BLE001 - the job's own call creates it, or raises
            log.debug("Creating the SparkContext early failed: %s", e)

    _early_context = threading.Thread(target=create, name="spark-context-early", daemon=True)
    _early_context.start()


def _join_early_context() -> None:
    """Waits for the context ``create_local_context_early`` creates, if it does (but on its
    own thread, which creates it)."""
    global _early_context
    early = _early_context
    if early is not None and early is not threading.current_thread():
        early.join()
        _early_context = None


def launch_jvm_early(
    master: str | None, conf: Mapping[str, str] | None, spark_log: str | None
) -> None:
    """Starts, in the background, the JVM ``get_or_create_context`` will create its context
    in, with the settings it will give it; ``jvm_launch.stop_unused`` stops it if none was
    created. For a program that does not build its own session: the JVM's settings (memory,
    class path) are fixed once it runs."""
    jvm_launch.launch_in_background(
        lambda: _context_conf(1, _configured_master(master, conf or {}), conf or {}), spark_log
    )


def _context_conf(num_slots: int, configured: str | None, conf: Mapping[str, str]):
    """The SparkConf of a new context on ``configured`` (None: the embedded ``local[N]``)."""
    from pyspark import SparkConf, SparkContext

    if os.environ.get("PYSPARK_GATEWAY_PORT"):  # spark-submit started this process's JVM
        SparkContext._ensure_initialized()
    spark_conf = SparkConf()  # with spark-submit's settings, if it did
    if configured is not None:
        spark_conf.setMaster(configured).setIfMissing("spark.app.name", "barrierflow")
        if is_local_master(configured) and not os.environ.get("PYSPARK_GATEWAY_PORT"):
            # Its workers run on this machine: this interpreter sees barrierflow, while
            # ``python3`` from the PATH (Spark's default) may not, as for the embedded session.
            # PySpark's driver takes the workers' Python from the environment alone.
            python = conf.get("spark.pyspark.python") or os.environ.get("PYSPARK_PYTHON")
            os.environ["PYSPARK_PYTHON"] = python or sys.executable
            spark_conf.set("spark.pyspark.python", os.environ["PYSPARK_PYTHON"])
    else:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        cores = max(num_slots, os.cpu_count() or 1)
        spark_conf.setMaster(f"local[{cores}]").setAppName("barrierflow")
        spark_conf.set("spark.ui.enabled", "false").set("spark.ui.showConsoleProgress", "false")
        spark_conf.set("spark.pyspark.python", os.environ["PYSPARK_PYTHON"])
    for key, value in conf.items():
        spark_conf.set(key, value)
    return spark_conf


def default_spark_log() -> str:
    """A new file for this process's Spark log: under ``BARRIERFLOW_LOG_DIR``, else the
    system temporary directory's ``barrierflow/logs``."""
    directory = os.environ.get("BARRIERFLOW_LOG_DIR") or os.path.join(
        tempfile.gettempdir(), "barrierflow", "logs"
    )
    os.makedirs(directory, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return os.path.join(directory, f"spark-{stamp}-{os.getpid()}.log")


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


def _check_slots(sc, num_slots: int) -> None:
    """A barrier stage needs all its tasks running at once: refuse what cannot, rather than
    let Spark retry the stage for minutes."""
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
        available = cluster_slots(sc)
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


def network_hosts(sc) -> tuple[str, str | None]:
    """(address the JobMaster binds, address slots bind or None for their own host's) on
    ``sc``, a SparkContext.

    Local masters keep everything on the loopback interface.
    """
    if sc.master.startswith("local"):
        return "127.0.0.1", "127.0.0.1"
    return sc.getConf().get("spark.driver.host"), None
