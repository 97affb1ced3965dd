"""What an attempt ships to its slots: one ``SlotDescriptor`` per slot, holding the descriptor
of each subtask it runs, with the state each restores. Performs no I/O.
"""

from __future__ import annotations

from barrierflow.checkpoint.restore import OperatorRestore
from barrierflow.cluster.job_plan import JobPlan
from barrierflow.cluster.operator_functions import own_functions
from barrierflow.graph.execution_graph import SubtaskId
from barrierflow.runtime.operators import OperatorSpec
from barrierflow.runtime.task_descriptor import TaskDescriptor
from barrierflow.runtime.task_executor import SlotDescriptor


def slot_descriptors(
    plan: JobPlan,
    attempt: int,
    token: int,
    jobmaster_endpoint: str,
    restore_uri: str | None,
    assignment: dict[SubtaskId, dict[str, OperatorRestore]] | None,
) -> list[SlotDescriptor]:
    """``assignment``: what each subtask restores (``state_assignment.assign_state``), None
    on a fresh start; ``restore_uri``: what its paths are relative to."""
    graph = plan.graph
    functions = own_functions(n for v in graph.job_graph.vertices for n in v.chain)
    slots = []
    for slot in range(graph.num_slots):
        tasks = []
        for sub in graph.in_slot(slot):
            v = sub.vertex
            tasks.append(
                TaskDescriptor(
                    job_id=plan.job_id,
                    job_name=plan.job_name,
                    attempt=attempt,
                    token=token,
                    vertex=v.id,
                    vertex_name=v.name,
                    subtask=sub.subtask,
                    parallelism=v.parallelism,
                    chain=tuple(
                        OperatorSpec(
                            n.uid,
                            n.name,
                            n.kind,
                            functions[n.uid],
                            n.key_selector,
                            frozenset(n.side_outputs),
                            n.output_type,
                            n.key_selector2,
                            n.input_timestamps,
                            n.dead_letters,
                            checks_key_groups=n.reinterpreted_input,
                        )
                        for n in v.chain
                    ),
                    num_input_channels=len(sub.input_channels),
                    outputs=sub.outputs,
                    config=plan.task_config,
                    restore_uri=restore_uri,
                    restore=assignment[sub.id] if assignment is not None else None,
                    input_of_channel=sub.input_of_channel,
                )
            )
        slots.append(
            SlotDescriptor(
                slot,
                attempt,
                jobmaster_endpoint,
                plan.slot_bind_host,
                tuple(tasks),
                heartbeat_timeout_s=plan.heartbeat_timeout_s,
            )
        )
    return slots
