"""A ``Deployer`` that runs each slot of an attempt on a thread of this process, with the real
task executor, network and state backends: the whole runtime without Spark, for tests of what
slots do (and leave on disk) that the JobMaster cannot see.

``ThreadExecutor`` runs a whole environment's job that way: ``env.execute()`` in a submission
context that names it (``barrierflow/client/submission_context.py``).

Each slot runs on its own copy of its descriptor, pickled and unpickled as Spark ships a task:
nothing of one slot's descriptor is another's, as on a cluster. Shared objects between slots
would hide what only a cluster shows, or show what a cluster never does.

**Threading:** ``submit`` on the JobMaster's thread; one thread per slot; ``on_done`` from the
last slot thread to end.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import cloudpickle

from barrierflow.cluster.job_master import JobMaster
from barrierflow.cluster.job_plan import JobPlan
from barrierflow.runtime.task_executor import SlotDescriptor, run_slot


class ThreadSubmittedAttempt:
    def __init__(self, threads: list[threading.Thread]) -> None:
        self._threads = threads

    def cancel(self) -> None:
        """Slot threads cannot be killed; they stop when the JobMaster cancels the attempt."""

    def join(self, timeout_s: float) -> bool:
        for thread in self._threads:
            thread.join(timeout_s)
        return not any(t.is_alive() for t in self._threads)


class ThreadDeployer:
    def __init__(self, slots: Callable[[], int | None] = lambda: None) -> None:
        """``slots``: how many slots the "cluster" offers now (None: no limit), for tests of
        what follows the cluster."""
        self._slots = slots

    def available_slots(self) -> int | None:
        return self._slots()

    def request_slots(self, count: int) -> bool:
        return False

    def submit(
        self,
        slots: list[SlotDescriptor],
        description: str,
        on_done: Callable[[BaseException | None], None],
    ) -> ThreadSubmittedAttempt:
        errors: list[BaseException] = []
        remaining = [len(slots)]
        lock = threading.Lock()

        def run(slot: SlotDescriptor) -> None:
            try:
                run_slot(slot)
            except BaseException as e:  # noqa: BLE001 - reported through on_done
                errors.append(e)
            with lock:
                remaining[0] -= 1
                last = remaining[0] == 0
            if last:  # as a Spark job: done when every task is, failed if one failed
                on_done(errors[0] if errors else None)

        threads = [
            threading.Thread(
                target=run,
                args=(cloudpickle.loads(cloudpickle.dumps(s)),),
                name=f"{description} slot {s.slot}",
                daemon=True,
            )
            for s in slots
        ]
        for thread in threads:
            thread.start()
        return ThreadSubmittedAttempt(threads)


class ThreadExecutor:
    """A ``JobExecutor`` (``client/executor.py``) whose JobMasters deploy on threads.
    ``slots``: the slots it says it offers (None: no limit); a test changes it as executors
    of a cluster would come and go."""

    def __init__(self, slots: int | None = None) -> None:
        self.slots = slots

    def job_master(self, plan: JobPlan) -> JobMaster:
        return JobMaster(plan, ThreadDeployer(lambda: self.slots))
