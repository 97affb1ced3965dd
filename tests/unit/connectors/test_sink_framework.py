"""The sink framework, over an in-memory ledger (``ledger_sink.py``): what each delivery
guarantee commits when, committables in the checkpoint and their re-commit after a failover,
which subtask commits which after a rescale, commit retries, and the global committer."""

from __future__ import annotations

import msgspec
import pytest

from barrierflow.connectors.base.struct_codec import StructCodec
from barrierflow.connectors.interfaces.commit_retry import CommitRetryPolicy, SinkCommitError
from barrierflow.connectors.interfaces.delivery_guarantee import DeliveryGuarantee
from barrierflow.datastream.connectors.base import Sink
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.connectors.file_system import FileSink
from barrierflow.graph.transformation import TransformationKind
from barrierflow.runtime.operators import UserFunctionError
from barrierflow.testing.harness import OperatorHarness, operator
from tests.unit.connectors.ledger_sink import GlobalLedgerSink, LedgerSink, new_ledger

FAST = CommitRetryPolicy(max_retries=2, initial_backoff_ms=0)


def sink_spec(sink):
    return operator(TransformationKind.SINK, sink, uid="sink")


# --- delivery guarantees ------------------------------------------------------------------------


def test_exactly_once_commits_only_when_the_checkpoint_completes():
    name, ledger = new_ledger()
    h = OperatorHarness(sink_spec(LedgerSink(name)))
    h.process([1, 2])
    h.snapshot(1)
    assert ledger.visible == []
    h.notify_complete(1)
    assert ledger.visible == [1, 2]


def test_at_least_once_commits_at_the_barrier_and_keeps_nothing_in_the_checkpoint():
    name, ledger = new_ledger()
    h = OperatorHarness(sink_spec(LedgerSink(name, DeliveryGuarantee.AT_LEAST_ONCE)))
    h.process([1, 2])
    assert ledger.visible == []
    state = h.snapshot(1)
    assert ledger.visible == [1, 2]
    h.close()
    h.restored(state).close()  # nothing pending: nothing committed again
    assert [cid for cid, _ in ledger.commits] == [1]


def test_none_commits_as_written():
    name, ledger = new_ledger()
    h = OperatorHarness(sink_spec(LedgerSink(name, DeliveryGuarantee.NONE)))
    h.process([1])
    assert ledger.visible == [1]
    h.process([2])
    assert ledger.visible == [1, 2]


@pytest.mark.parametrize(
    "guarantee", [DeliveryGuarantee.EXACTLY_ONCE, DeliveryGuarantee.AT_LEAST_ONCE]
)
def test_without_checkpointing_what_was_written_is_committed_when_the_input_ends(guarantee):
    name, ledger = new_ledger()
    h = OperatorHarness(sink_spec(LedgerSink(name, guarantee)), checkpointing=False)
    h.process([1])
    h.process([2])
    assert ledger.visible == []
    h.finish()
    assert ledger.visible == [1, 2]


def test_an_aborted_checkpoints_committables_are_committed_with_the_next_one():
    name, ledger = new_ledger()
    h = OperatorHarness(sink_spec(LedgerSink(name)))
    h.process([1])
    h.snapshot(1)
    h.notify_aborted(1)
    h.process([2])
    h.snapshot(2)
    h.notify_complete(2)
    assert ledger.visible == [1, 2]
    assert [cid for cid, _ in ledger.commits] == [1, 2]  # in checkpoint order


# --- recovery -----------------------------------------------------------------------------------


def test_a_failover_commits_the_restored_checkpoints_committables_again_and_only_those():
    name, ledger = new_ledger()
    h = OperatorHarness(sink_spec(LedgerSink(name)))
    h.process([1])
    state = h.snapshot(1)  # checkpoint 1 completes; the subtask dies before it commits
    h.process([2])
    h.snapshot(2)  # never completes
    h.close()

    restored = h.restored(state)
    assert ledger.visible == [1]
    (recovery,) = ledger.recoveries[1:]  # the first was the fresh start's
    assert [c.checkpoint_id for c in recovery.committables] == [1]
    assert recovery.previous_parallelism == 1 and recovery.owns(0)
    restored.close()
    restored.restored(state).close()  # a second failover: committed again, idempotently
    assert ledger.visible == [1]


def test_a_fresh_start_cleans_up_too():
    name, ledger = new_ledger()
    OperatorHarness.subtasks(sink_spec(LedgerSink(name)), 2)
    assert [(r.subtask, r.previous_parallelism, r.committables) for r in ledger.recoveries] == [
        (0, None, ()),
        (1, None, ()),
    ]


@pytest.mark.parametrize("new_parallelism", [1, 2, 3, 5])
def test_after_a_rescale_each_restored_committable_is_committed_by_one_subtask(new_parallelism):
    name, ledger = new_ledger()
    spec = sink_spec(LedgerSink(name))
    old = OperatorHarness.subtasks(spec, 3)
    for s, h in enumerate(old):
        h.process([f"row {s}"])
    states = [h.snapshot(4) for h in old]  # completes; no subtask lives to commit it

    new = OperatorHarness.rescaled(spec, states, new_parallelism)
    assert sorted(ledger.visible) == ["row 0", "row 1", "row 2"]
    committed = sorted(txn for _, txns in ledger.commits for txn in txns)
    assert len(committed) == len(set(committed)) == 3  # each once
    owners = {r.subtask: [o for o in range(3) if r.owns(o)] for r in ledger.recoveries[3:]}
    assert sorted(o for owned in owners.values() for o in owned) == [0, 1, 2]
    for h in new:
        h.close()


# --- retries ------------------------------------------------------------------------------------


def test_a_failing_commit_is_retried_with_backoff():
    name, ledger = new_ledger()
    h = OperatorHarness(sink_spec(LedgerSink(name).with_commit_retry(FAST)))
    h.process([1])
    h.snapshot(1)
    ledger.failures_left = 2
    h.notify_complete(1)
    assert ledger.visible == [1]


def test_a_commit_that_keeps_failing_fails_the_subtask_naming_the_sink():
    name, ledger = new_ledger()
    h = OperatorHarness(sink_spec(LedgerSink(name).with_commit_retry(FAST)))
    h.process([1])
    h.snapshot(1)
    ledger.failures_left = 3
    with pytest.raises(SinkCommitError, match=r"sink 'sink' .* after 2 retries: ConnectionError"):
        h.notify_complete(1)


def test_commit_retry_policies_are_checked():
    with pytest.raises(ValueError, match="max_retries must be an integer >= 0"):
        CommitRetryPolicy(max_retries=-1)
    with pytest.raises(TypeError, match="CommitRetryPolicy"):
        LedgerSink("x").with_commit_retry(3)


# --- the global committer -----------------------------------------------------------------------


def test_a_global_committer_commits_every_subtasks_committables_once_per_checkpoint():
    name, ledger = new_ledger()
    subtasks = OperatorHarness.subtasks(sink_spec(GlobalLedgerSink(name)), 3)
    for s, h in enumerate(subtasks):
        h.process([s])
    for h in subtasks:
        h.snapshot(1)
    assert ledger.visible == []
    subtasks[0].notify_complete(1)
    assert sorted(ledger.visible) == [0, 1, 2]
    assert [(cid, len(txns)) for cid, txns in ledger.commits] == [(1, 3)]
    for h in subtasks:
        h.notify_complete(1)  # the coordinator hears it once
    assert len(ledger.commits) == 1


@pytest.mark.parametrize("new_parallelism", [1, 2, 4])
def test_a_global_committer_commits_what_a_failover_restored_at_any_parallelism(new_parallelism):
    name, ledger = new_ledger()
    spec = sink_spec(GlobalLedgerSink(name))
    old = OperatorHarness.subtasks(spec, 2)
    for s, h in enumerate(old):
        h.process([s])
    states = [h.snapshot(1) for h in old]  # completes; the JobMaster fails before committing
    for h in old:
        h.process(["after"])  # never checkpointed
        h.snapshot(2)
        h.close()

    new = OperatorHarness.rescaled(spec, states, new_parallelism)
    assert sorted(ledger.visible) == [0, 1]
    assert [(cid, len(txns)) for cid, txns in ledger.commits] == [(1, 2)]
    for h in new:
        h.close()


def test_a_global_committer_commits_an_aborted_checkpoints_committables_after_a_failover():
    name, ledger = new_ledger()
    spec = sink_spec(GlobalLedgerSink(name))
    (h,) = OperatorHarness.subtasks(spec, 1)
    h.process(["a"])
    h.snapshot(1)  # checkpoint 1 is aborted: its committables wait for the next
    h.process(["b"])
    state = h.snapshot(2)  # holds 1's committables too, as does the coordinator's
    h.process(["c"])
    h.snapshot(3)  # completes, but the JobMaster dies before committing anything
    h.close()

    h.restored(state).close()
    assert sorted(ledger.visible) == ["a", "b"]
    assert [cid for cid, _ in ledger.commits] == [1, 2]


def test_without_checkpointing_a_global_committer_commits_when_every_subtask_ended():
    name, ledger = new_ledger()
    subtasks = OperatorHarness.subtasks(sink_spec(GlobalLedgerSink(name)), 2, checkpointing=False)
    subtasks[0].process([1])
    subtasks[0].finish()
    assert ledger.visible == []
    subtasks[1].process([2])
    subtasks[1].finish()
    assert sorted(ledger.visible) == [1, 2]
    assert [(cid, len(txns)) for cid, txns in ledger.commits] == [(0, 2)]


def test_a_sink_without_a_committer_restored_from_another_sinks_snapshot_drops_its_committables(
    caplog,
):
    name, ledger = new_ledger()
    h = OperatorHarness(sink_spec(LedgerSink(name)))
    h.process([1])
    state = h.snapshot(1)
    replaced = OperatorHarness(sink_spec(DiscardingSink())).restored(state)
    assert "1 committable(s) of the restored snapshot it answers for are dropped" in caplog.text
    replaced.close()
    assert ledger.visible == []


def test_a_sink_without_a_committer_drops_another_sinks_typed_committables_unread(caplog, tmp_path):
    h = OperatorHarness(sink_spec(FileSink(str(tmp_path))))
    h.process([1])
    state = h.snapshot(1)  # FileCommittables, which a DiscardingSink's codec cannot read
    replaced = OperatorHarness(sink_spec(DiscardingSink())).restored(state)
    assert "1 committable(s) of the restored snapshot it answers for are dropped" in caplog.text
    replaced.close()


# --- connectors written before typed committables ---------------------------------------------


class Txn(msgspec.Struct, frozen=True):
    txn: str


class TypedLedgerSink(LedgerSink):
    """A sink whose committables are typed (``Txn``), and whose writer still returns dicts."""

    def committable_codec(self) -> StructCodec[Txn]:
        return StructCodec(Txn)


def test_a_sink_written_before_codecs_keeps_its_dict_committables_through_a_failover():
    name, ledger = new_ledger()
    h = OperatorHarness(sink_spec(LedgerSink(name)))  # no codec: plain values
    h.process([1])
    state = h.snapshot(1)
    h.close()
    h.restored(state).close()
    assert ledger.visible == [1]


def test_a_writer_returning_a_dict_where_its_sink_has_typed_committables_is_told_what_to_return():
    name, _ = new_ledger()
    h = OperatorHarness(sink_spec(TypedLedgerSink(name)))
    h.process([1])
    with pytest.raises(UserFunctionError, match=r"sink 'sink' .*expected a Txn, got dict .*Txn\("):
        h.snapshot(1)


def test_a_sink_wrapping_a_typed_one_without_its_codec_is_told_to_return_the_wrapped_one_s(
    tmp_path,
):
    class Wrapper(Sink):  # as wrappers were written before codecs
        def __init__(self, inner: FileSink) -> None:
            self.inner = inner

        def create_writer(self, context):
            return self.inner.create_writer(context)

        def create_committer(self, context):
            return self.inner.create_committer(context)

    h = OperatorHarness(sink_spec(Wrapper(FileSink(str(tmp_path)))))
    h.process([1])
    with pytest.raises(UserFunctionError, match=r"is a FileCommittable, .*wraps another"):
        h.snapshot(1)
