"""Rescaling a running job: a restore at another parallelism from a checkpoint taken for it, by
the same path as recovery (one restore path: key groups, operator state redistribution and
sinks' owner rule do the rest). A rescale, in order:

1. the request is checked before anything stops: the job runs and checkpoints, nothing else is
   being rescaled, the new graph builds (within the max parallelism, no forward() between two
   parallelisms), it is not the one running, the cluster offers its slots;
2. a checkpoint is taken at once (FLIP-461's "trigger actively": little to replay);
3. the attempt is stopped (no restart counted against the restart strategy, no exception);
4. the next attempt runs the new graph and restores that checkpoint;
5. once it processed its first record (or all its tasks run, for a job without input then), the
   rescale is done, with its downtime: from the stop to that first record.

A checkpoint that fails, or a rescaled attempt that fails before it ran, ends the rescale: the
job goes on at its old parallelism (from the same checkpoint, in the second case). A restart
after a failure at another parallelism (reactive mode, when an executor was lost) is recorded
as a rescale too: its downtime runs from the failure. Every rescale
asked for, done, refused or fallen back, is kept in the rescale history (REST ``/rescales``,
the web UI) and logged.

**Threading:** the JobMaster's thread; ``request`` from there (the JobMaster posts requests as
mail). Performs no I/O.
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field

import msgspec

from barrierflow.cluster.attempt_supervisor import AttemptListener
from barrierflow.cluster.job_plan import JobPlan
from barrierflow.errors import ConfigurationError
from barrierflow.graph.execution_graph import ExecutionGraph

log = logging.getLogger("barrierflow.jobmaster")

HISTORY_LENGTH = 100
NO_INPUT_GRACE_S = 5.0  # a rescaled job whose tasks run but that reads nothing is done then


class RescaleStatus(enum.Enum):
    IN_PROGRESS = "IN_PROGRESS"
    COMPLETED = "COMPLETED"
    REFUSED = "REFUSED"  # checked and refused before anything stopped
    FAILED = "FAILED"  # its checkpoint failed: nothing stopped, the job goes on as it was
    FELL_BACK = "FELL_BACK"  # the rescaled attempt failed: back to the old parallelism
    SKIPPED = "SKIPPED"  # a policy (the autoscaler) looked, and decided not to rescale


class RescaleRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One rescale, as the history, the REST API and the web UI show it."""

    id: int
    requested_ms: int
    trigger: str  # "manual" (command line, REST, JobClient), "reactive", "autoscaler"
    reason: str
    from_parallelism: dict[str, int]  # vertex name -> parallelism
    to_parallelism: dict[str, int]
    status: RescaleStatus
    ended_ms: int | None = None
    checkpoint_id: int | None = None
    downtime_ms: float | None = None  # from the stop to the rescaled attempt's first record
    detail: str | None = None
    decisions: int = 1  # SKIPPED: how many decisions in a row it stands for (the latest's reason)


class RescaleRefused(ConfigurationError):
    """A rescale that cannot be done; the message says why, and nothing stopped."""


@dataclass
class _Rescale:
    record: RescaleRecord
    graph: ExecutionGraph
    old_graph: ExecutionGraph
    future: Future[RescaleRecord]
    checkpoint_id: int | None = None
    stopped_at: float | None = None  # epoch seconds
    attempt: int | None = None  # the attempt that runs the new graph
    running_at: float | None = None


@dataclass
class RescaleHistory:
    records: list[RescaleRecord] = field(default_factory=list)

    def add(self, record: RescaleRecord) -> None:
        self.records = [r for r in self.records if r.id != record.id] + [record]
        del self.records[:-HISTORY_LENGTH]


def parallelism_of(graph: ExecutionGraph) -> dict[str, int]:
    return {v.name: v.parallelism for v in graph.job_graph.vertices}


class Rescaler(AttemptListener):
    def __init__(
        self,
        plan: JobPlan,
        available_slots: Callable[[], int | None],
        checkpoint_now: Callable[[Callable[[int | None, str | None], None]], None],
        stop_attempt: Callable[[str], None],
        on_record: Callable[[RescaleRecord], None],
        reactive: bool = False,
    ) -> None:
        """``checkpoint_now``: the coordinator's; ``stop_attempt``: ends the running attempt
        for a rescale (no restart counted); ``on_record``: told of each record as it changes
        (the status view, for REST and the web UI); ``reactive``: the job runs in reactive
        mode, whose parallelism follows the slots (a rescale asked by hand is refused)."""
        self._plan = plan
        self._reactive = reactive
        self._available_slots = available_slots
        self._checkpoint_now = checkpoint_now
        self._stop_attempt = stop_attempt
        self._on_record = on_record
        self.history = RescaleHistory()
        self._current: _Rescale | None = None
        self._next_id = 1

    @property
    def in_progress(self) -> bool:
        return self._current is not None

    @property
    def graph(self) -> ExecutionGraph:
        """The graph the job runs now."""
        return self._plan.graph

    # --- 1. the request --------------------------------------------------------------------

    def request(
        self,
        parallelism: int | None,
        per_operator: Mapping[str, int],
        reason: str,
        trigger: str = "manual",
        running: bool = True,
        checkpointing: bool = True,
    ) -> Future[RescaleRecord]:
        """Starts a rescale of the job to default ``parallelism`` (None: unchanged) and
        ``per_operator`` (operator uid -> parallelism; an operator's chain follows it); the
        future ends with its record, or with ``RescaleRefused`` saying why nothing changed."""
        future: Future[RescaleRecord] = Future()
        old = self._plan.graph
        record = RescaleRecord(
            id=self._next_id,
            requested_ms=_now_ms(),
            trigger=trigger,
            reason=reason,
            from_parallelism=parallelism_of(old),
            to_parallelism={},
            status=RescaleStatus.IN_PROGRESS,
        )
        self._next_id += 1
        try:
            graph = self._checked(parallelism, per_operator, trigger, running, checkpointing)
        except RescaleRefused as e:
            self._end(record, RescaleStatus.REFUSED, str(e))
            future.set_exception(e)
            return future
        record = msgspec.structs.replace(record, to_parallelism=parallelism_of(graph))
        self._current = _Rescale(record, graph, old, future)
        self._publish(record)
        log.info("Rescaling %s: %s (%s)", _describe(record), reason, trigger)
        self._checkpoint_now(self._checkpointed)  # 2.
        return future

    def _checked(
        self,
        parallelism: int | None,
        per_operator: Mapping[str, int],
        trigger: str,
        running: bool,
        checkpointing: bool,
    ) -> ExecutionGraph:
        if self._reactive and trigger != "reactive":
            raise RescaleRefused(
                "the job runs in reactive mode (scheduler-mode: reactive): its parallelism "
                "follows the task slots Spark gives it; add or remove executors instead"
            )
        if self._current is not None:
            asked = self._current.record.requested_ms / 1000
            raise RescaleRefused(
                f"a rescale is in progress ({_describe(self._current.record)}, asked at "
                f"{time.strftime('%H:%M:%S', time.localtime(asked))}): ask again once it is done"
            )
        if not running:
            raise RescaleRefused("the job is not running: rescale it once its tasks run")
        if not checkpointing:
            raise RescaleRefused(
                "the job does not checkpoint, and a rescale restores a checkpoint: enable "
                "checkpointing, or stop with a savepoint and start it again with -s and -p"
            )
        if self._plan.regraph is None:
            raise RescaleRefused("this job was not built from a program, so it cannot be rebuilt")
        for what, value in (("parallelism", parallelism), *per_operator.items()):
            if value is not None and (not isinstance(value, int) or value < 1):
                raise RescaleRefused(f"{what} must be a positive integer, got {value!r}")
        uids = {n.uid for v in self._plan.graph.job_graph.vertices for n in v.chain}
        unknown = sorted(set(per_operator) - uids)
        if unknown:
            raise RescaleRefused(
                f"the job has no operator {', '.join(map(repr, unknown))}; its operators: "
                f"{', '.join(sorted(uids))}"
            )
        try:
            graph = self._plan.regraph(parallelism, _with_chains(self._plan.graph, per_operator))
        except ConfigurationError as e:
            raise RescaleRefused(str(e)) from e
        if parallelism_of(graph) == parallelism_of(self._plan.graph):
            raise RescaleRefused("the job already runs at that parallelism")
        _check_fixed_vertices(self._plan.graph, graph)
        available = self._available_slots()
        if available is not None and graph.num_slots > available:
            raise RescaleRefused(
                f"the job at that parallelism needs {graph.num_slots} task slots at once, and "
                f"the cluster offers {available}: add executors or cores, or ask for less"
            )
        return graph

    def restarting(
        self,
        graph: ExecutionGraph,
        reason: str,
        trigger: str,
        failed_at: float,
        checkpoint_id: int | None,
    ) -> None:
        """The attempt that starts next, after a failure at ``failed_at`` (epoch seconds),
        runs ``graph`` at another parallelism, restoring ``checkpoint_id``: a rescale,
        recorded as one."""
        if self._current is not None:
            self._finish(self._current, RescaleStatus.FAILED, "the job failed during it")
        old = self._plan.graph
        record = RescaleRecord(
            id=self._next_id,
            requested_ms=int(failed_at * 1000),
            trigger=trigger,
            reason=reason,
            from_parallelism=parallelism_of(old),
            to_parallelism=parallelism_of(graph),
            status=RescaleStatus.IN_PROGRESS,
        )
        self._next_id += 1
        self._current = _Rescale(record, graph, old, Future(), checkpoint_id, failed_at)
        self._publish(record)
        log.info("Rescaling %s: %s (%s)", _describe(record), reason, trigger)

    def decided_not_to(self, trigger: str, reason: str) -> None:
        """A policy looked and decided not to rescale: kept in the history, the latest of a
        run of such decisions in place of the one before (each was logged)."""
        last = self.history.records[-1] if self.history.records else None
        now = _now_ms()
        if last is not None and last.status is RescaleStatus.SKIPPED and last.trigger == trigger:
            record = msgspec.structs.replace(
                last, reason=reason, ended_ms=now, decisions=last.decisions + 1
            )
        else:
            parallelism = parallelism_of(self._plan.graph)
            record = RescaleRecord(
                id=self._next_id,
                requested_ms=now,
                trigger=trigger,
                reason=reason,
                from_parallelism=parallelism,
                to_parallelism=parallelism,
                status=RescaleStatus.SKIPPED,
                ended_ms=now,
            )
            self._next_id += 1
        self._publish(record)

    # --- 2.-3. the checkpoint, then the stop ------------------------------------------------

    def _checkpointed(self, checkpoint_id: int | None, why: str | None) -> None:
        rescale = self._current
        if rescale is None or rescale.stopped_at is not None:
            return
        if checkpoint_id is None:
            self._finish(rescale, RescaleStatus.FAILED, f"its checkpoint failed: {why}")
            return
        rescale.checkpoint_id = checkpoint_id
        rescale.stopped_at = time.time()
        self._stop_attempt(f"rescale {_describe(rescale.record)}")

    # --- 4.-5. the JobMaster's loop ---------------------------------------------------------

    def stopping(self) -> bool:
        """Whether the attempt that ended was stopped for a rescale."""
        return (
            self._current is not None
            and self._current.stopped_at is not None
            and (self._current.attempt is None)
        )

    def next_graph(self) -> ExecutionGraph | None:
        """The graph the next attempt runs, when it changes."""
        rescale = self._current
        if rescale is None or rescale.stopped_at is None or rescale.attempt is not None:
            return None
        return rescale.graph

    def attempt_started(self, number: int) -> None:
        rescale = self._current
        if rescale is not None and rescale.stopped_at is not None and rescale.attempt is None:
            rescale.attempt = number

    def attempt_running(self, number: int, now: float) -> None:
        rescale = self._current
        if rescale is not None and rescale.attempt == number and rescale.running_at is None:
            rescale.running_at = now

    def attempt_sampled(self, number: int, first_record_at: float | None, now: float) -> None:
        """A heartbeat of ``number``'s subtasks: done once it processed its first record, or
        once it ran a while without input."""
        rescale = self._current
        if rescale is None or rescale.attempt != number or rescale.running_at is None:
            return
        if first_record_at is None and now - rescale.running_at < NO_INPUT_GRACE_S:
            return
        downtime = None
        if first_record_at is not None:
            assert rescale.stopped_at is not None  # it stopped before its attempt ran
            downtime = max(0.0, (first_record_at - rescale.stopped_at) * 1000)
        self._finish(rescale, RescaleStatus.COMPLETED, None, downtime)

    def attempt_failed(self, number: int, error: str) -> ExecutionGraph | None:
        """The attempt ``number`` failed: if it ran the new graph and had not run yet, the
        rescale falls back; the graph the next attempt runs then."""
        rescale = self._current
        if rescale is None or rescale.attempt != number:
            return None
        self._finish(rescale, RescaleStatus.FELL_BACK, f"the rescaled attempt failed: {error}")
        return rescale.old_graph

    def job_ended(self, why: str) -> None:
        if self._current is not None:
            self._finish(self._current, RescaleStatus.FAILED, why)

    # --- records --------------------------------------------------------------------------

    def _finish(
        self,
        rescale: _Rescale,
        status: RescaleStatus,
        detail: str | None,
        downtime_ms: float | None = None,
    ) -> None:
        self._current = None
        record = msgspec.structs.replace(
            rescale.record, checkpoint_id=rescale.checkpoint_id, downtime_ms=downtime_ms
        )
        record = self._end(record, status, detail)
        if status is RescaleStatus.COMPLETED:
            rescale.future.set_result(record)
        else:
            rescale.future.set_exception(RescaleRefused(f"rescale {status.value}: {detail}"))

    def _end(
        self, record: RescaleRecord, status: RescaleStatus, detail: str | None
    ) -> RescaleRecord:
        record = msgspec.structs.replace(record, status=status, ended_ms=_now_ms(), detail=detail)
        self._publish(record)
        if status is RescaleStatus.COMPLETED:
            downtime = (
                "" if record.downtime_ms is None else f", downtime {record.downtime_ms:.0f} ms"
            )
            log.info(
                "Rescaled %s from checkpoint %s%s",
                _describe(record),
                record.checkpoint_id,
                downtime,
            )
        else:
            log.warning("Rescale %s %s: %s", _describe(record), status.value.lower(), detail)
        return record

    def _publish(self, record: RescaleRecord) -> None:
        self.history.add(record)
        self._on_record(record)


def _with_chains(graph: ExecutionGraph, per_operator: Mapping[str, int]) -> dict[str, int]:
    """An operator's parallelism set, every operator of its chain gets it: a chain runs at
    one parallelism."""
    result: dict[str, int] = {}
    for vertex in graph.job_graph.vertices:
        asked = {per_operator[n.uid] for n in vertex.chain if n.uid in per_operator}
        if len(asked) > 1:
            raise RescaleRefused(
                f"operators {', '.join(n.uid for n in vertex.chain)} run chained, at one "
                f"parallelism; asked for {sorted(asked)}"
            )
        if asked:
            result.update(dict.fromkeys((n.uid for n in vertex.chain), asked.pop()))
    return result


def _describe(record: RescaleRecord) -> str:
    changed = [
        f"{name} {record.from_parallelism.get(name, '?')} -> {p}"
        for name, p in record.to_parallelism.items()
        if record.from_parallelism.get(name) != p
    ]
    return ", ".join(changed) or "(no change)"


def _now_ms() -> int:
    return int(time.time() * 1000)


def _check_fixed_vertices(old: ExecutionGraph, new: ExecutionGraph) -> None:
    """A ``RescaleRefused`` if a vertex that cannot change its parallelism would
    (``JobVertex.fixed_parallelism``). Pure."""
    now = {v.chain[0].uid: v.parallelism for v in new.job_graph.vertices}
    for vertex in old.job_graph.vertices:
        reason = vertex.fixed_parallelism
        rescaled = now.get(vertex.chain[0].uid, vertex.parallelism) != vertex.parallelism
        if reason is not None and rescaled:
            raise RescaleRefused(reason)
