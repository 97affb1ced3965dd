"""The suite's odd/even jobs key by parity: at the parallelisms the tests run them with, both
keys must fall to different subtasks, or the exactly-once tests would check one busy keyed
subtask and one idle."""

from __future__ import annotations

import pytest

from barrierflow.protocol.key_group_range import subtask_for_key_group
from barrierflow.state.key_groups import assign_to_key_group
from tests.jobs.odd_even import MAX_PARALLELISM


@pytest.mark.parametrize("parallelism", [2, 3])
def test_parity_keys_fall_to_both_subtasks(parallelism):
    owners = [
        subtask_for_key_group(
            MAX_PARALLELISM, parallelism, assign_to_key_group(key, MAX_PARALLELISM)
        )
        for key in (0, 1)
    ]
    assert owners[0] != owners[1], owners
