"""A standby's head start under driver high availability: on an embedded or local master its
SparkContext is created while it waits, and the job's own call then waits for that context
instead of creating a second; on a cluster's master none is created (it would hold the
cluster's executors for as long as the standby waits). A restart's delay starts the next
attempt's Python workers the same way. No Spark: what they do is recorded."""

from __future__ import annotations

import threading

import pytest

from barrierflow.cluster.spark import session


@pytest.fixture
def created(monkeypatch) -> list[tuple[int, str | None, str]]:
    """Each context creation (the slots, the master asked for, the creating thread's name),
    and the workers it started."""
    calls: list[tuple[int, str | None, str]] = []

    class Context:
        def parallelize(self, items, partitions):
            calls.append(("workers started", list(items), partitions))
            return self

        def foreach(self, function):
            function(0)  # imports the task runtime, as each worker does

    def create(num_slots, master=None, conf=None, spark_log=None):
        calls.append((num_slots, master, threading.current_thread().name))
        return Context()

    monkeypatch.setattr(session, "get_or_create_context", create)
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    monkeypatch.delenv("SPARK_CONF_DIR", raising=False)
    monkeypatch.delenv("SPARK_HOME", raising=False)
    yield calls
    session._join_early_context()


@pytest.mark.parametrize("master", [None, "local[2]"])
def test_an_embedded_or_local_master_gets_its_context_and_workers_in_the_background(
    created, master
):
    session.create_local_context_early(3, master)
    session._join_early_context()
    assert created == [(3, master, "spark-context-early"), ("workers started", [0, 1, 2], 3)]


@pytest.mark.parametrize("master", ["spark://host:7077", "yarn", "k8s://https://host:6443"])
def test_a_cluster_master_gets_none(created, master):
    session.create_local_context_early(3, master)
    assert session._early_context is None and created == []


def test_the_jobs_own_call_waits_for_the_early_context(monkeypatch):
    done = threading.Event()
    early = threading.Thread(target=lambda: done.wait(5) or None)
    monkeypatch.setattr(session, "_early_context", early)
    early.start()
    waiter = threading.Thread(target=session._join_early_context)
    waiter.start()
    waiter.join(0.2)
    assert waiter.is_alive()  # the context is still being created
    done.set()
    waiter.join(5)
    assert not waiter.is_alive() and session._early_context is None


class FakeSparkContext:
    """What ``start_python_workers`` asks of a SparkContext, recorded."""

    def __init__(self, fail: bool = False) -> None:
        self.calls: list[tuple] = []
        self.fail = fail
        self.done = threading.Event()

    def setJobGroup(self, group, description):
        self.calls.append(("group", group.startswith("barrierflow-workers-"), description))

    def parallelize(self, items, partitions):
        self.calls.append(("parallelize", list(items), partitions))
        return self

    def foreach(self, function):
        self.done.set()
        if self.fail:
            raise RuntimeError("no workers")
        function(0)


@pytest.mark.parametrize("fail", [False, True])
def test_a_deployer_starts_the_next_attempts_workers_in_a_job_group_of_their_own(fail):
    from barrierflow.cluster.spark.deployment import SparkDeployer

    context = FakeSparkContext(fail)
    SparkDeployer(context).prepare(2)  # returns at once; a failure is the attempt's to meet
    assert context.done.wait(5)
    assert context.calls == [("group", True, "workers"), ("parallelize", [0, 1], 2)]
