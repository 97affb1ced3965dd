"""How the state of a checkpoint or savepoint maps onto the operators of a job, by ``uid``.

Each operator of the job is *restored* (the snapshot has state for its uid: of its subtasks,
or of its coordinator on the JobMaster) or *new* (it starts empty); each uid of the snapshot
the job lacks is *left behind*, which is an error unless the user allows it (``-n``,
``execution.state-recovery.ignore-unclaimed-state``). Keyed state restores at any
parallelism, but only with the max parallelism it was written with (the number of key
groups). The restore (``state_assignment.assign_state``) and ``barrierflow run --dry-run``
both go by this mapping. Performs no I/O.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from barrierflow.checkpoint.metadata import CheckpointMetadata, OperatorState
from barrierflow.graph.job_graph import JobGraph
from barrierflow.human_units import human_bytes


class OperatorFate(enum.Enum):
    RESTORED = "restored"
    NEW = "new"  # no state in the snapshot: starts empty
    LEFT_BEHIND = "left behind"  # state in the snapshot, no such operator in the job


@dataclass(frozen=True)
class OperatorMapping:
    uid: str
    fate: OperatorFate
    name: str
    snapshot_parallelism: int | None  # None: the snapshot has no state for it
    job_parallelism: int | None  # None: the job has no such operator
    keyed_states: dict[str, str]  # state name -> kind, as far as the snapshot records them
    key_groups: tuple[int, int] | None  # the key groups its keyed state covers
    has_operator_state: bool
    size_bytes: int  # of its subtasks' state
    coordinator_bytes: int | None = None  # its coordinator's state; None: none in the snapshot

    def describe(self) -> str:
        head = f"{self.uid} ({self.name}): {self.fate.value}"
        if self.fate is OperatorFate.NEW:
            return f"{head}, no state in the snapshot: starts empty"
        parts = []
        if self.keyed_states:
            names = ", ".join(f"{n} ({k})" for n, k in sorted(self.keyed_states.items()))
            parts.append(f"keyed state {names}")
        if self.key_groups is not None:
            parts.append(f"key groups {self.key_groups[0]}-{self.key_groups[1]}")
        if self.has_operator_state:
            parts.append("operator state")
        if self.coordinator_bytes is not None:
            parts.append(f"coordinator state {human_bytes(self.coordinator_bytes)}")
        parts.append(human_bytes(self.size_bytes))
        if self.fate is OperatorFate.RESTORED:
            parts.append(f"parallelism {self.snapshot_parallelism} -> {self.job_parallelism}")
        return f"{head}, {', '.join(parts)}"


@dataclass(frozen=True)
class StateMapping:
    checkpoint_id: int
    snapshot: str  # "checkpoint" or "savepoint (canonical)", for messages
    job_max_parallelism: int
    operators: list[OperatorMapping]  # the job's, in job order, then those left behind
    max_parallelism_changes: list[tuple[str, int]]  # (uid, its max parallelism in the snapshot)

    def of_fate(self, fate: OperatorFate) -> list[str]:
        return [o.uid for o in self.operators if o.fate is fate]

    def problems(self, allow_non_restored_state: bool) -> list[str]:
        """Why the restore would fail; empty when it would not."""
        problems = []
        left_behind = self.of_fate(OperatorFate.LEFT_BEHIND)
        if left_behind and not allow_non_restored_state:
            problems.append(
                f"{self.snapshot} {self.checkpoint_id} has state for operators {left_behind} "
                "that this job does not have; give the operators the same uid() as in the job "
                "that took it, or pass -n (--allow-non-restored-state) to skip that state"
            )
        for uid, snapshot_max in self.max_parallelism_changes:
            problems.append(
                f"operator {uid!r} was checkpointed with max parallelism {snapshot_max} and the "
                f"job now has {self.job_max_parallelism}; keyed state cannot be restored with "
                "another max parallelism (set pipeline.max-parallelism back to "
                f"{snapshot_max})"
            )
        return problems

    def describe(self) -> list[str]:
        return [o.describe() for o in self.operators]


def map_state(metadata: CheckpointMetadata, job_graph: JobGraph) -> StateMapping:
    by_uid = {op.uid: op for op in metadata.operators if op.subtasks or op.coordinator is not None}
    operators: list[OperatorMapping] = []
    job_uids = set()
    for vertex in job_graph.vertices:
        for node in vertex.chain:
            job_uids.add(node.uid)
            op = by_uid.get(node.uid)
            if op is None:
                operators.append(
                    OperatorMapping(
                        node.uid, OperatorFate.NEW, node.name, None, vertex.parallelism, {},
                        None, False, 0,
                    )
                )  # fmt: skip
            else:
                operators.append(_mapping(op, OperatorFate.RESTORED, node.name, vertex.parallelism))
    for uid, op in by_uid.items():
        if uid not in job_uids:
            operators.append(_mapping(op, OperatorFate.LEFT_BEHIND, op.name, None))
    changes = [
        (op.uid, op.max_parallelism)
        for op in by_uid.values()
        if op.uid in job_uids
        and op.max_parallelism != job_graph.max_parallelism
        and any(s.keyed_state for s in op.subtasks)
    ]
    kind = "savepoint" if metadata.is_savepoint else "checkpoint"
    if metadata.is_savepoint:
        kind += f" ({metadata.snapshot_format.value})"
    return StateMapping(metadata.checkpoint_id, kind, job_graph.max_parallelism, operators, changes)


def _mapping(
    op: OperatorState, fate: OperatorFate, name: str, job_parallelism: int | None
) -> OperatorMapping:
    handles = [h for s in op.subtasks for h in s.keyed_state]
    states: dict[str, str] = {}
    for handle in handles:
        states.update(handle.states)
    key_groups = (
        (min(h.key_group_start for h in handles), max(h.key_group_end for h in handles))
        if handles
        else None
    )
    return OperatorMapping(
        uid=op.uid,
        fate=fate,
        name=name,
        snapshot_parallelism=op.parallelism,
        job_parallelism=job_parallelism,
        keyed_states=states,
        key_groups=key_groups,
        has_operator_state=any(s.operator_state is not None for s in op.subtasks),
        size_bytes=sum(s.state_size() for s in op.subtasks),
        coordinator_bytes=None if op.coordinator is None else len(op.coordinator.data),
    )
