"""Starts the JVM a SparkContext runs in (PySpark's Py4J gateway), at once or in the background.

Starting the JVM takes over a second, and ``barrierflow run`` knows enough to start it before
the job file is even imported: started in the background then, it is up by the time the job
is built and its SparkContext is created (the start-up section of docs/benchmarks.md).

**Threading:** ``launch_in_background`` returns at once; the launch runs on a daemon thread.
``join_background_launch`` (the thread that creates the SparkContext) waits for it.
**Lifecycle:** a JVM launched in the background that no SparkContext came to use (the job
file failed, or never called ``execute()``) is shut down by ``stop_unused``.
**I/O:** starts a process; Spark's output goes to the given log file, else the console.
"""

from __future__ import annotations

import logging
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("barrierflow.spark")

_STOP_WAIT_S = 10.0


@dataclass
class _BackgroundLaunch:
    thread: threading.Thread
    error: BaseException | None = field(default=None)


_background: _BackgroundLaunch | None = None


def launch(spark_conf, spark_log: str | None) -> None:
    """Starts the JVM with ``spark_conf`` (a SparkConf), its output to ``spark_log`` (None:
    the console), and makes it the one PySpark's SparkContext will use."""
    from pyspark import SparkContext
    from pyspark.java_gateway import launch_gateway

    if spark_log is None:
        gateway = launch_gateway(spark_conf)
    else:
        with open(spark_log, "ab") as out:  # the JVM keeps its own descriptor
            gateway = launch_gateway(spark_conf, popen_kwargs={"stdout": out, "stderr": out})
    SparkContext._ensure_initialized(gateway=gateway)
    if spark_log is not None:
        log.info("Spark's own log and stack dumps go to %s", spark_log)


def launch_in_background(spark_conf: Callable[[], Any], spark_log: str | None) -> None:
    """``launch`` on a thread of its own, with the SparkConf ``spark_conf`` gives there (it
    imports PySpark, which need not hold up the caller); ``join_background_launch`` waits."""
    global _background

    def run() -> None:
        try:
            launch(spark_conf(), spark_log)
        except BaseException as e:  # noqa: BLE001 - raised again where the JVM is needed
            background.error = e

    background = _BackgroundLaunch(threading.Thread(target=run, name="spark-jvm-launch"))
    background.thread.daemon = True
    _background = background
    background.thread.start()


def join_background_launch() -> None:
    """Waits for a background launch, if one was started; raises what it failed with, as a
    launch on this thread would have."""
    global _background
    background, _background = _background, None
    if background is None:
        return
    background.thread.join()
    if background.error is not None:
        raise background.error


def stop_unused() -> None:
    """Shuts down a JVM launched in the background if no SparkContext was created on it."""
    from pyspark import SparkContext

    if _background is None:  # none launched, or a SparkContext took it
        return
    try:
        join_background_launch()
    except Exception:  # noqa: BLE001 - it failed to start: nothing to stop
        return
    gateway = SparkContext._gateway
    if gateway is None or SparkContext._active_spark_context is not None:
        return
    proc = getattr(gateway, "proc", None)
    gateway.shutdown()
    SparkContext._gateway = None
    SparkContext._jvm = None
    if proc is not None:
        proc.stdin.close()  # the gateway server exits when its standard input closes
        try:
            proc.wait(_STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
