"""Restoring an unaligned checkpoint's data in flight: each input's records into the input they
were recorded for, split at another parallelism by that input's own key selector; a broadcast
edge's queued records only to the consumers that had not received them; and data in flight
written before connect had two inputs refused where it would reach a two-input operator."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from barrierflow.checkpoint.channel_state import (
    ChannelStateSnapshot,
    InputChannelState,
    OutputChannelState,
    encode_channel_state,
)
from barrierflow.checkpoint.metadata import InlineHandle
from barrierflow.checkpoint.restore import OperatorRestore
from barrierflow.checkpoint.state_streams import StorageRestoreStreams
from barrierflow.graph.execution_graph import OutputPlan, OutputTarget
from barrierflow.graph.transformation import PartitionerSpec, Partitioning, TransformationKind
from barrierflow.protocol.key_group_range import key_group_range_for_subtask
from barrierflow.runtime.channel_state_restore import restore_channel_state
from barrierflow.runtime.operators import OperatorSpec
from barrierflow.state.key_groups import KeyGroupCache
from barrierflow.testing.harness import StreamTaskHarness

MAX_PARALLELISM = 128


class RecordingChain:
    """What restore_channel_state asks of the chain, recorded."""

    def __init__(self, takes_two_inputs: bool) -> None:
        self.takes_two_inputs = takes_two_inputs
        self.inputs: list[tuple[int, list]] = []
        self.outputs: list[tuple[int, list, list[int] | None]] = []

    def process(self, batch):
        self.inputs.append((0, batch.values))

    def process_second_input(self, batch):
        self.inputs.append((1, batch.values))

    def emit_restored(self, edge, batch, channels):
        self.outputs.append((edge, batch.values, channels))

    def flush(self):
        pass


def descriptor(head: OperatorSpec, subtask: int, parallelism: int, outputs=()):
    d = StreamTaskHarness([head], num_input_channels=2, input_of_channel=(0, 1)).descriptor
    return dataclasses.replace(d, subtask=subtask, parallelism=parallelism, outputs=tuple(outputs))


def state(inputs=(), outputs=(), version: int = 2) -> InlineHandle:
    snapshot = ChannelStateSnapshot(list(inputs), list(outputs), version)
    return InlineHandle(encode_channel_state(snapshot))


def buffer(records: list) -> bytes:
    return pickle.dumps(records, protocol=5)


def restore(d, chain, channel_states) -> None:
    old = OperatorRestore([None] * len(channel_states), [], list(enumerate(channel_states)))
    restore_channel_state(d, old, StorageRestoreStreams(None, shares_storage=False), chain)


def keyed_co_process() -> OperatorSpec:
    return OperatorSpec(
        "join", "Join", TransformationKind.CO_PROCESS, None,
        key_selector=lambda r: r[0], key_selector2=lambda r: r[1],
    )  # fmt: skip


def test_each_input_takes_its_own_records_split_by_its_own_key_at_another_parallelism():
    records1 = [(k, "first") for k in range(40)]
    records2 = [("second", k) for k in range(40)]
    old = [
        state([InputChannelState(0, [buffer(records1[i::2])], 0),
               InputChannelState(1, [buffer(records2[i::2])], 1)])
        for i in range(2)
    ]  # fmt: skip
    own = key_group_range_for_subtask(MAX_PARALLELISM, 3, 1)
    key_group = KeyGroupCache(MAX_PARALLELISM).key_group
    chain = RecordingChain(takes_two_inputs=True)

    restore(descriptor(keyed_co_process(), 1, 3), chain, old)

    taken1 = sorted(r for i, rs in chain.inputs if i == 0 for r in rs)
    taken2 = sorted(r for i, rs in chain.inputs if i == 1 for r in rs)
    assert taken1 == sorted(r for r in records1 if key_group(r[0]) in own)
    assert taken2 == sorted(r for r in records2 if key_group(r[1]) in own)
    assert 0 < len(taken1) < len(records1)


@pytest.mark.parametrize(("subtask", "old_subtask"), [(0, 0), (1, 1), (2, 0)])
def test_the_broadcast_input_comes_from_the_old_subtask_whose_broadcast_state_is_restored(
    subtask, old_subtask
):
    head = OperatorSpec("rules", "Rules", TransformationKind.BROADCAST_PROCESS, None)
    old = [state([InputChannelState(1, [buffer([f"rule of {i}"])], 1)]) for i in range(2)]
    chain = RecordingChain(takes_two_inputs=True)

    restore(descriptor(head, subtask, 3), chain, old)

    assert chain.inputs == [(1, [f"rule of {old_subtask}"])]


def broadcast_edge(consumers: int) -> OutputPlan:
    targets = tuple(OutputTarget(("v1", k), 0) for k in range(consumers))
    return OutputPlan(4, PartitionerSpec(Partitioning.BROADCAST), targets, input=1)


@pytest.mark.parametrize(("consumers", "channels"), [(2, [1]), (3, [1]), (1, [])])
def test_a_broadcast_edge_sends_queued_records_only_where_they_had_not_arrived(consumers, channels):
    """Old consumer 1 of 2 had not received [7]: the new consumers that take its share."""
    head = OperatorSpec("source", "Source", TransformationKind.MAP, None)
    d = descriptor(head, 0, 1, [broadcast_edge(consumers)])
    chain = RecordingChain(takes_two_inputs=False)

    restore(d, chain, [state(outputs=[OutputChannelState(4, 1, [buffer([7])], 2)])])

    assert chain.outputs == [(4, [7], channels)]


def test_data_in_flight_of_before_two_inputs_is_refused_on_an_edge_towards_one():
    head = OperatorSpec("source", "Source", TransformationKind.MAP, None)
    d = descriptor(head, 0, 1, [broadcast_edge(2)])
    tagged = [state(outputs=[OutputChannelState(4, 1, [buffer([(1, 7)])])], version=1)]
    with pytest.raises(RuntimeError, match=r"on job edge 4 .* savepoint"):
        restore(d, RecordingChain(takes_two_inputs=False), tagged)
