"""What a subtask restored from an unaligned checkpoint does before it takes any new input: it
sends the output channel state and processes the input channel state of the old subtasks it
takes over (``checkpoint/channel_state.py`` records them).

Each old subtask's output state goes to one new subtask (the old index modulo the
parallelism) and its records are routed again through the edge's partitioner, except on a
broadcast edge, where each consumer gets again only what it had not received (the old
consumer's share, at another parallelism the share of the old consumer whose state it takes).
Input state goes to the input of the head operator it was recorded for. At the same
parallelism each subtask takes its own; at another, a keyed input is split by key group (by
that input's key selector) so each record meets its keyed state, the broadcast input of a
broadcast process operator comes from the old subtask whose broadcast state the new one
restores, and any other input from one old subtask (the old index modulo the parallelism).

Channel state written before connect had two inputs (version 1) holds connect's records
tagged with their input: where it would reach a two-input operator, it is refused.

**Threading:** the task thread, while it opens. **I/O:** reads the channel state from
checkpoint storage.
"""

from __future__ import annotations

import enum

from barrierflow.checkpoint.channel_state import (
    ChannelStateSnapshot,
    InputChannelState,
    OutputChannelState,
    decode_channel_state,
)
from barrierflow.checkpoint.restore import OperatorRestore
from barrierflow.checkpoint.state_streams import StorageRestoreStreams
from barrierflow.graph.execution_graph import OutputPlan
from barrierflow.graph.transformation import Partitioning, TransformationKind
from barrierflow.protocol.buffer_codec import decode_buffer
from barrierflow.protocol.key_group_range import key_group_range_for_subtask
from barrierflow.protocol.record_batch import RecordBatch
from barrierflow.runtime.operator_chain import OperatorChain
from barrierflow.runtime.task_descriptor import TaskDescriptor
from barrierflow.state.key_groups import KeyGroupCache


class _Share(enum.Enum):
    """What a new subtask takes of one old subtask's input state, per input."""

    NONE = "none"
    ALL = "all"
    OWN_KEY_GROUPS = "own key groups"


def restore_channel_state(
    descriptor: TaskDescriptor,
    restore: OperatorRestore,
    streams: StorageRestoreStreams,
    chain: OperatorChain,
) -> None:
    """1. reads the channel state of the old subtasks this one takes over; 2. refuses tagged
    records (version 1) bound for a two-input operator; 3. sends the output state again;
    4. processes the input state, each record through the input it was recorded for."""
    old_parallelism = len(restore.operator_states)
    inputs = 2 if chain.takes_two_inputs else 1
    outputs: list[OutputChannelState] = []
    batches: list[tuple[int, RecordBatch]] = []  # (input, records)
    for old_subtask, handle in restore.channel_states:
        # its output state is ours
        ours = old_subtask % descriptor.parallelism == descriptor.subtask
        shares = [_share(descriptor, old_subtask, old_parallelism, i) for i in range(inputs)]
        if not ours and all(share is _Share.NONE for share in shares):
            continue
        state = decode_channel_state(streams.read(handle))  # 1.
        _refuse_tagged_records(descriptor, state, inputs)  # 2.
        if ours:
            outputs += state.outputs
        for channel in state.inputs:
            batches += _input_batches(descriptor, channel, shares, inputs)
    plans = {plan.edge: plan for plan in descriptor.outputs}
    for output in outputs:  # 3.
        plan = plans.get(output.edge)
        if plan is None:
            raise RuntimeError(
                f"the checkpoint holds data in flight on job edge {output.edge} from "
                f"{descriptor.vertex_name}, which this job does not have: an unaligned checkpoint "
                "restores only into the same job graph (take a savepoint to change it)"
            )
        channels = _broadcast_channels(plan, output)
        for buffer in output.buffers:
            chain.emit_restored(output.edge, decode_buffer(buffer), channels)
    for input_index, batch in batches:  # 4.
        if batch.values:
            (chain.process_second_input if input_index else chain.process)(batch)
    chain.flush()


def _share(
    descriptor: TaskDescriptor, old_subtask: int, old_parallelism: int, input_index: int
) -> _Share:
    if old_parallelism == descriptor.parallelism:
        return _Share.ALL if old_subtask == descriptor.subtask else _Share.NONE
    head = descriptor.chain[0]
    if head.kind is TransformationKind.BROADCAST_PROCESS and input_index == 1:
        # the old subtask whose copy of the broadcast state this one restores
        # (``OperatorStateStore.restore``: every old subtask kept one)
        return _Share.ALL if old_subtask == descriptor.subtask % old_parallelism else _Share.NONE
    if (head.key_selector, head.key_selector2)[input_index] is not None:
        return _Share.OWN_KEY_GROUPS
    return _Share.ALL if old_subtask % descriptor.parallelism == descriptor.subtask else _Share.NONE


def _input_batches(
    descriptor: TaskDescriptor, channel: InputChannelState, shares: list[_Share], inputs: int
) -> list[tuple[int, RecordBatch]]:
    """The records of one old input channel this subtask takes, with their input."""
    if channel.input >= inputs:
        raise RuntimeError(
            f"the checkpoint holds data in flight into input {channel.input + 1} of "
            f"{descriptor.vertex_name}, whose head operator has {inputs}: an unaligned checkpoint "
            "restores only into the same job graph (take a savepoint to change it)"
        )
    share = shares[channel.input]
    if share is _Share.NONE:
        return []
    batches = [decode_buffer(b) for b in channel.buffers]
    if share is _Share.OWN_KEY_GROUPS:
        own = key_group_range_for_subtask(
            descriptor.config.max_parallelism, descriptor.parallelism, descriptor.subtask
        )
        key_group = KeyGroupCache(descriptor.config.max_parallelism).key_group
        head = descriptor.chain[0]
        select = (head.key_selector, head.key_selector2)[channel.input]
        assert select is not None  # a keyed input: shared by key groups
        batches = [b.compress([key_group(select(r)) in own for r in b.values]) for b in batches]
    return [(channel.input, b) for b in batches]


def _broadcast_channels(plan: OutputPlan, output: OutputChannelState) -> list[int] | None:
    """A broadcast edge's restored records go to the consumer they were queued for (at
    another parallelism, to each consumer that takes that old consumer's state); None: routed
    by the edge's partitioner."""
    if plan.partitioner.kind is not Partitioning.BROADCAST:
        return None
    consumers = len(plan.targets)
    old_consumers = output.consumers or consumers  # version 1 did not record it
    return [k for k in range(consumers) if k % old_consumers == output.target]


def _refuse_tagged_records(
    descriptor: TaskDescriptor, state: ChannelStateSnapshot, inputs: int
) -> None:
    """Version 1 channel state holds connect's records tagged ``(input, record)``, which a
    two-input operator would take for records."""
    if state.version >= 2:
        return
    into_two_inputs = inputs == 2 and any(c.buffers for c in state.inputs)
    plans = {plan.edge: plan for plan in descriptor.outputs}
    towards_two_inputs = [
        o.edge
        for o in state.outputs
        if o.buffers and o.edge in plans and plans[o.edge].input is not None
    ]
    if into_two_inputs or towards_two_inputs:
        where = "into" if into_two_inputs else f"on job edge {towards_two_inputs[0]} from"
        raise RuntimeError(
            f"the checkpoint holds data in flight {where} {descriptor.vertex_name} written before "
            "connect and broadcast had two inputs (its records are tagged with their input), "
            "which this version cannot restore: restore from an aligned checkpoint or a "
            "savepoint of the job instead (savepoints are aligned)"
        )
