"""Jobs on Spark: the JobMaster on this process (the Spark driver), its slots one barrier stage
on the SparkContext of the session the program gave, else the active one, else a new one
(embedded ``local[N]`` unless a master is configured).

**I/O:** may start Spark's JVM and connect to a Spark master.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from barrierflow.cluster.job_master import JobMaster
from barrierflow.cluster.job_plan import JobPlan
from barrierflow.cluster.python_dependencies import NO_DEPENDENCIES, PythonDependencies


class SparkExecutor:
    def __init__(
        self,
        session: Any = None,
        master: str | None = None,
        conf: Mapping[str, str] | None = None,
        verbose: bool = False,
        python_dependencies: PythonDependencies = NO_DEPENDENCIES,
    ) -> None:
        """``session``: the program's SparkSession, if it gave one; ``master`` and ``conf``
        (Spark settings) for a SparkContext this executor builds, whose JVM logs into a file
        unless ``verbose``; ``python_dependencies`` (checked) shipped to its executors."""
        self._session = session
        self._master = master
        self._conf = conf
        self._verbose = verbose
        self._python_dependencies = python_dependencies

    def prepare_while_standby(self, num_slots: int) -> None:
        """A standby's head start (driver high availability): on an embedded or local master,
        the SparkContext is created while the program waits, so that it runs the job at once
        when it leads; all it holds is this machine's memory, which it would take then. On a
        cluster's master it creates none: a context there would hold the cluster's executors
        for as long as the standby waits, hours maybe, for a job that runs elsewhere."""
        from barrierflow.cluster.spark.session import create_local_context_early, default_spark_log

        if self._session is None:
            create_local_context_early(
                num_slots, self._master, self._conf, None if self._verbose else default_spark_log()
            )

    def job_master(self, plan: JobPlan) -> JobMaster:
        from barrierflow.cluster.spark.deployment import SparkDeployer
        from barrierflow.cluster.spark.python_dependency_shipping import ship, workers_python
        from barrierflow.cluster.spark.session import (
            default_spark_log,
            get_or_create_context,
            network_hosts,
        )

        if self._session is not None:
            context = self._session.sparkContext
        else:  # a SparkContext without a SparkSession: see get_or_create_context
            # reactive mode runs on the slots there are: it needs one
            reactive = plan.reactive_stabilization_s is not None
            context = get_or_create_context(
                1 if reactive else plan.graph.num_slots,
                master=self._master,
                conf=self._conf,
                spark_log=None if self._verbose else default_spark_log(),
            )
        plan.bind_host, plan.slot_bind_host = network_hosts(context)
        deps = self._python_dependencies
        deployer = SparkDeployer(context, ship(context, deps), workers_python(context, deps))
        return JobMaster(plan, deployer)
