"""What a subtask restored from an unaligned checkpoint does before it takes any new input: it
sends the output channel state and processes the input channel state of the old subtasks it
takes over (``checkpoint/channel_state.py`` records them).

Each old subtask's data in flight goes to one new subtask (the old index modulo the
parallelism), and records are routed again through the edges' partitioners; the input of a
keyed chain head is split by key group instead, so each record meets the keyed state it
belongs to.

**Threading:** the task thread, while it opens. **I/O:** reads the channel state from
checkpoint storage.
"""

from __future__ import annotations

from barrierflow.checkpoint.channel_state import decode_channel_state
from barrierflow.checkpoint.restore import OperatorRestore
from barrierflow.checkpoint.state_streams import StorageRestoreStreams
from barrierflow.protocol.buffer_codec import decode_buffer
from barrierflow.protocol.record_batch import RecordBatch
from barrierflow.runtime.operator_chain import OperatorChain
from barrierflow.runtime.task_descriptor import TaskDescriptor
from barrierflow.state.key_groups import KeyGroupCache, key_group_range_for_subtask


def restore_channel_state(
    d: TaskDescriptor,
    restore: OperatorRestore,
    streams: StorageRestoreStreams,
    chain: OperatorChain,
) -> None:
    old_parallelism = len(restore.operator_states)
    head = d.chain[0]
    by_key_group = head.key_selector is not None and old_parallelism != d.parallelism
    outputs, inputs = [], []
    for old_subtask, handle in restore.channel_states:
        ours = old_subtask % d.parallelism == d.subtask
        if not (ours or by_key_group):
            continue
        state = decode_channel_state(streams.read(handle))
        if ours:
            outputs += state.outputs
        inputs += [decode_buffer(b) for channel in state.inputs for b in channel.buffers]
    for output in outputs:
        for buffer in output.buffers:
            if not chain.emit_to_edge(output.edge, decode_buffer(buffer)):
                raise RuntimeError(
                    f"the checkpoint holds data in flight on job edge {output.edge} from "
                    f"{d.vertex_name}, which this job does not have: an unaligned checkpoint "
                    "restores only into the same job graph (take a savepoint to change it)"
                )
    if by_key_group:
        own = key_group_range_for_subtask(d.config.max_parallelism, d.parallelism, d.subtask)
        key_group = KeyGroupCache(d.config.max_parallelism).key_group
        select = head.key_selector
        inputs = [_own_key_groups(batch, lambda r: key_group(select(r)) in own) for batch in inputs]
    if chain.takes_two_inputs and any(batch.values for batch in inputs):
        # The old channels' input would have to be told apart again (the channel indexes of
        # another parallelism name other edges); nothing builds such a head from the API yet.
        raise RuntimeError(
            f"{d.vertex_name} would restore data in flight into a two-input operator, which "
            "this version cannot route to its inputs: restore from an aligned checkpoint or a "
            "savepoint instead"
        )
    for batch in inputs:
        if batch.values:
            chain.process(batch)
    chain.flush()


def _own_key_groups(batch: RecordBatch, wanted) -> RecordBatch:
    return batch.compress([wanted(r) for r in batch.values])
