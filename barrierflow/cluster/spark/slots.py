"""The task slots a SparkContext offers a barrier stage, and asking the cluster manager for
more: what rescaling, reactive mode and the autoscaler ask of Spark.

**I/O:** calls into the driver's JVM (py4j).
"""

from __future__ import annotations

import logging

from barrierflow.cluster.spark.masters import is_local_master

log = logging.getLogger("barrierflow.spark")


def available_slots(sc) -> int:
    """The task slots ``sc`` offers now: ``local[N]``'s N, or its executors' cores."""
    if is_local_master(sc.master):
        return sc.defaultParallelism
    return cluster_slots(sc)


def request_executors(sc, slots: int) -> bool:
    """Asks the cluster manager for the executors that ``slots`` more task slots take
    (``SparkContext.requestExecutors``, which barrier stages allow where dynamic allocation
    is refused); False on a local master, or when the cluster manager refuses."""
    if is_local_master(sc.master):
        return False
    conf = sc.getConf()
    cores = int(conf.get("spark.executor.cores", "1")) // int(conf.get("spark.task.cpus", "1"))
    executors = -(-slots // max(1, cores))
    try:
        return bool(sc._jsc.sc().requestExecutors(executors))
    except Exception as e:  # noqa: BLE001 - py4j's error: the cluster manager said no
        log.warning("Spark did not take a request for %d executors: %s", executors, e)
        return False


def cluster_slots(sc) -> int:
    """Tasks the registered executors can run at once: what Spark's own barrier-stage check
    counts (``SparkContext.maxNumConcurrentTasks``)."""
    jsc = sc._jsc.sc()
    return jsc.maxNumConcurrentTasks(jsc.resourceProfileManager().defaultResourceProfile())
