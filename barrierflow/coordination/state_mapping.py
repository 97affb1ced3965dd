"""How the state of a checkpoint or savepoint maps onto the operators of a job, by ``uid``.

Each operator of the job is *restored* (the snapshot has state for its uid: of its subtasks,
or of its coordinator on the JobMaster) or *new* (it starts empty); each uid of the snapshot
the job lacks is *left behind*, which is an error unless the user allows it (``-n``,
``execution.state-recovery.ignore-unclaimed-state``). Keyed state restores at any
parallelism, but only with the max parallelism it was written with (the number of key
groups), and under the key type it was written with, where both jobs declare one. The
restore (``state_assignment.assign_state``) and ``barrierflow run --dry-run`` both go by this
mapping; the dry run also compares each state with what the job's functions declare
(``state/declared_states.py``): unchanged, will migrate, or incompatible
(``state/schema_evolution.py``). Performs no I/O.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from barrierflow.checkpoint.metadata import CheckpointMetadata, OperatorState
from barrierflow.graph.job_graph import JobGraph
from barrierflow.human_units import human_bytes
from barrierflow.state.descriptors import StateKind
from barrierflow.state.schema_evolution import Compatibility, compare
from barrierflow.state.state_schema import type_text

if TYPE_CHECKING:  # found by opening the job's functions, which this module does not do
    from barrierflow.state.declared_states import DeclaredStates


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
    key_type_change: tuple[str, str] | None = None  # (in the snapshot, in the job), if refused
    states: tuple[StateVerdict, ...] = ()  # known when the job's declarations were given
    declaration_error: str = ""  # what opening its function raised, if it did

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

    def describe_states(self) -> list[str]:
        """One line per state, once the job's declarations were compared."""
        lines = [f"state {v.name!r}: {v.verdict}" for v in self.states]
        if self.declaration_error:
            lines.append(
                f"its states are unknown: opening its function raised {self.declaration_error}"
            )
        return lines

    def problems(self) -> list[str]:
        found = [
            f"operator {self.uid!r}: state {v.name!r} is incompatible: {v.reason}"
            for v in self.states
            if v.compatibility is Compatibility.INCOMPATIBLE
        ]
        if self.key_type_change is not None:
            was, now = self.key_type_change
            found.insert(
                0,
                f"operator {self.uid!r} keeps keyed state under keys of type {was} and the job "
                f"now declares key type {now}; a key type cannot change (its keys would no "
                f"longer be found): key_by(..., key_type={was}) as before",
            )
        return found


@dataclass(frozen=True)
class StateVerdict:
    """What a restore does to one state of an operator, as the job declares it."""

    name: str
    compatibility: Compatibility | None  # None: not restored (new), or not declared (kept)
    verdict: str  # "unchanged", "will migrate: ...", "incompatible: ...", "new", ...
    reason: str = ""


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
        for operator in self.operators:
            if operator.fate is OperatorFate.RESTORED:
                problems += operator.problems()
        for uid, snapshot_max in self.max_parallelism_changes:
            problems.append(
                f"operator {uid!r} was checkpointed with max parallelism {snapshot_max} and the "
                f"job now has {self.job_max_parallelism}; keyed state cannot be restored with "
                "another max parallelism (set pipeline.max-parallelism back to "
                f"{snapshot_max})"
            )
        return problems

    def describe(self) -> list[str]:
        lines = []
        for operator in self.operators:
            lines.append(operator.describe())
            lines += [f"  {line}" for line in operator.describe_states()]
        return lines


def map_state(
    metadata: CheckpointMetadata,
    job_graph: JobGraph,
    declared: dict[str, DeclaredStates] | None = None,
) -> StateMapping:
    """``declared``: the states each keyed operator of the job declares, by uid, to compare
    with the snapshot's (the dry run); None: not compared."""
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
                mapping = _mapping(op, OperatorFate.RESTORED, node.name, vertex.parallelism)
                new_key_type = type_text(node.key_type) if node.key_type else ""
                if op.key_type and new_key_type and op.key_type != new_key_type:
                    mapping = replace(mapping, key_type_change=(op.key_type, new_key_type))
                if declared is not None and node.uid in declared:
                    mapping = _with_verdicts(mapping, op, declared[node.uid])
                operators.append(mapping)
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


def _with_verdicts(
    mapping: OperatorMapping, op: OperatorState, declared: DeclaredStates
) -> OperatorMapping:
    """Each state of the snapshot and of the job's declarations, with what becomes of it."""
    kinds: dict[str, str] = {}
    types: dict[str, str] = {}
    for handle in (h for s in op.subtasks for h in s.keyed_state):
        kinds.update(handle.states)
        types.update(handle.types)
    verdicts = []
    by_name = {d.name: d for d in declared.descriptors}
    for name in sorted(set(kinds) | set(by_name)):
        descriptor = by_name.get(name)
        if name not in kinds:
            verdicts.append(StateVerdict(name, None, "new: starts empty"))
        elif descriptor is None:
            verdict = "not declared by the job: kept in its snapshots as it is"
            if declared.error:
                verdict = "unknown (see below)"
            verdicts.append(StateVerdict(name, None, verdict))
        else:
            change = compare(name, StateKind(kinds[name]), types.get(name), descriptor)
            verdicts.append(
                StateVerdict(name, change.compatibility, change.describe(), change.reason)
            )
    return replace(mapping, states=tuple(verdicts), declaration_error=declared.error)
