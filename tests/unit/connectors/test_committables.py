"""Committables as the framework keeps them, and the one rule of who answers for which old
subtask after a rescale."""

from __future__ import annotations

import pytest

from barrierflow.connectors.interfaces.committables import (
    Committable,
    JobEndFate,
    PendingCommittables,
    Recovery,
    fate_at_job_end,
    from_state,
    owner_of,
    to_state,
)
from barrierflow.connectors.interfaces.versioned_codec import PLAIN_VALUES
from barrierflow.connectors.postgres.committable import POSTGRES_COMMITTABLES, PostgresCommittable


@pytest.mark.parametrize(("old", "new"), [(1, 1), (4, 2), (2, 4), (3, 5), (7, 3)])
def test_every_old_subtask_is_answered_for_by_exactly_one_new_subtask(old, new):
    recoveries = [Recovery(s, new, old) for s in range(new)]
    for o in range(max(old, new)):
        assert [r.subtask for r in recoveries if r.owns(o)] == [owner_of(o, new)]
        assert [r.subtask for r in recoveries if o in r.owned_subtasks()] == [owner_of(o, new)]


def test_a_fresh_start_answers_for_the_subtasks_of_its_own_parallelism():
    assert list(Recovery(1, 3).owned_subtasks()) == [1]
    assert list(Recovery(1, 3, previous_parallelism=8).owned_subtasks()) == [1, 4, 7]


def test_committables_go_to_state_per_checkpoint_and_subtask_and_back():
    committables = [Committable(3, 0, {"a": 1}), Committable(3, 0, {"a": 2}), Committable(4, 1, {})]
    state = to_state(committables, PLAIN_VALUES)
    assert [(e["checkpoint_id"], e["subtask"], len(e["committables"])) for e in state] == [
        (3, 0, 2),
        (4, 1, 1),
    ]
    assert from_state(state, PLAIN_VALUES) == committables


def test_each_committable_goes_to_state_as_its_codec_s_version_and_bytes():
    committable = PostgresCommittable("gid", "42")
    (entry,) = to_state([Committable(5, 1, committable)], POSTGRES_COMMITTABLES)
    (stored,) = entry["committables"]
    assert stored == [2, POSTGRES_COMMITTABLES.serialize(committable)]
    assert from_state([entry], POSTGRES_COMMITTABLES) == [Committable(5, 1, committable)]


def test_pending_committables_are_taken_up_to_a_completed_checkpoint():
    pending = PendingCommittables()
    pending.add(1, 0, [{"n": 1}])
    pending.add(2, 0, [{"n": 2}])
    pending.add(3, 0, [])
    assert [c.data["n"] for c in pending.up_to(2)] == [1, 2]
    pending.drop_up_to(2)
    assert not pending


def test_committables_of_earlier_versions_take_their_subtask_from_the_committable():
    entries = [{"checkpoint_id": 2, "committables": [{"gid": "g", "subtask": 3}, {"dir": "d"}]}]
    assert [(c.checkpoint_id, c.subtask) for c in from_state(entries, PLAIN_VALUES)] == [
        (2, 3),
        (2, 0),
    ]


def test_committables_kept_as_dicts_before_codecs_are_read_by_their_sink_s_codec():
    entries = [{"checkpoint_id": 2, "subtask": 1, "committables": [{"gid": "g"}]}]
    assert from_state(entries, POSTGRES_COMMITTABLES) == [
        Committable(2, 1, PostgresCommittable("g", ""))  # no server id was kept then
    ]


@pytest.mark.parametrize(
    ("prepared_for", "last_completed", "fate"),
    [
        (4, 4, JobEndFate.COMMIT),  # the last completed checkpoint's: its commit never came
        (3, 4, JobEndFate.COMMIT),  # an aborted checkpoint's, carried into checkpoint 4
        (5, 4, JobEndFate.ROLL_BACK),  # prepared for a checkpoint that never completed
        (1, None, JobEndFate.ROLL_BACK),  # the job completed nothing
    ],
)
def test_at_the_job_end_what_a_completed_checkpoint_named_is_committed_the_rest_rolled_back(
    prepared_for, last_completed, fate
):
    assert fate_at_job_end(prepared_for, last_completed) is fate
