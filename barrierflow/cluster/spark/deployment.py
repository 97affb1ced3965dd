"""Runs the slots of one job attempt as one Spark barrier stage, one Spark task per slot.

The barrier stage gang-schedules the slots (all run at once, as a pipelined job needs); they
find each other through the JobMaster, not Spark's barrier calls, which answer a second late
(docs/adr/0023-gate-endpoints-through-the-job-master.md). When any slot fails, Spark aborts
the whole stage ("could not recover from a failed barrier ResultStage"); the JobMaster, not
Spark, decides about restarts.

A failed stage's Python workers do not outlive it (their tasks are interrupted, so Spark
ends them): each attempt forks new ones, which import the task runtime before their first
record. ``start_python_workers`` runs a small job that starts them beforehand; Spark keeps
them idle in its pool and the next barrier stage reuses them (a restart's delay, a standby's
wait: docs/benchmarks.md).

**Threading:** ``SparkDeployer.submit`` returns at once; the Spark job runs on a thread of its
own and reports its end through the callback. ``prepare`` returns at once too.
"""

from __future__ import annotations

import functools
import logging
import threading
import uuid
from collections.abc import Callable

from barrierflow.cluster.spark.python_dependency_shipping import workers_running
from barrierflow.cluster.spark.python_worker_setup import (
    NOTHING_TO_SET_UP,
    WorkerSetup,
    prepare_worker,
)
from barrierflow.cluster.spark.slots import available_slots, request_executors
from barrierflow.runtime.task_executor import SlotDescriptor, run_slot

log = logging.getLogger("barrierflow.spark")


def start_python_workers(context, num_slots: int) -> None:
    """Starts, on ``context`` (a SparkContext), a Python worker per slot with the task
    runtime imported, left idle for the next stage to reuse; returns when they are."""
    context.parallelize(range(num_slots), num_slots).foreach(_import_task_runtime)


def _import_task_runtime(_: object) -> None:
    """In a Python worker: what a slot imports first (this module, and ``run_slot``'s)."""


def _run_partition(slots: list[SlotDescriptor], setup: WorkerSetup, _rows):
    from pyspark import BarrierTaskContext

    prepare_worker(setup)  # the job's Python requirements, before any of its code runs
    yield run_slot(slots[BarrierTaskContext.get().partitionId()])


class SparkSubmittedAttempt:
    def __init__(self, context, group: str, thread: threading.Thread) -> None:
        self._context = context
        self._group = group
        self._thread = thread

    def cancel(self) -> None:
        self._context.cancelJobGroup(self._group)

    def join(self, timeout_s: float) -> bool:
        self._thread.join(timeout_s)
        return not self._thread.is_alive()


class SparkDeployer:
    """A ``Deployer`` over a SparkContext: an attempt is one Spark job of one barrier stage,
    whose tasks first set up the job's Python dependencies (``setup``) and run in ``python``
    (None: the context's interpreter)."""

    def __init__(
        self, context, setup: WorkerSetup = NOTHING_TO_SET_UP, python: str | None = None
    ) -> None:
        self._context = context
        self._setup = setup
        self._python = python

    def prepare(self, num_slots: int) -> None:
        """Starts the next attempt's Python workers in the background (``start_python_workers``),
        in a job group of their own; a failure is left to the attempt, which starts its own."""

        def run() -> None:
            try:
                self._context.setJobGroup(f"barrierflow-workers-{uuid.uuid4().hex}", "workers")
                start_python_workers(self._context, num_slots)
            except Exception as e:  # noqa: BLE001 - the attempt forks its own workers
                log.debug("Starting Python workers ahead of an attempt failed: %s", e)

        threading.Thread(target=run, name="spark-python-workers", daemon=True).start()

    def submit(
        self,
        slots: list[SlotDescriptor],
        description: str,
        on_done: Callable[[BaseException | None], None],
    ) -> SparkSubmittedAttempt:
        sc = self._context
        group = f"barrierflow-{uuid.uuid4().hex}"

        def run() -> None:
            try:
                sc.setJobGroup(group, description, interruptOnCancel=True)
                run_slots = functools.partial(_run_partition, slots, self._setup)
                with workers_running(sc, self._python):
                    rdd = sc.parallelize(range(len(slots)), len(slots)).barrier()
                    rdd = rdd.mapPartitions(run_slots)
                    rdd._jrdd  # noqa: B018 - planned now, with the job's interpreter
                rdd.collect()
            except BaseException as e:  # noqa: BLE001 - handed to the JobMaster, which decides
                on_done(e)
            else:
                on_done(None)

        thread = threading.Thread(target=run, name=f"spark-{description}", daemon=True)
        thread.start()
        return SparkSubmittedAttempt(sc, group, thread)

    def available_slots(self) -> int:
        """Local: the ``local[N]`` cores; a cluster: what its registered executors can run
        at once (Spark's own barrier-stage count)."""
        return available_slots(self._context)

    def request_slots(self, count: int) -> bool:
        return request_executors(self._context, count)
