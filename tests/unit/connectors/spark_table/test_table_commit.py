"""The Spark table sink's decisions: whether a checkpoint's commit is due, the names of the
files it commits, where it stages and marks, and the marker's content."""

from __future__ import annotations

import pytest

from barrierflow.connectors.spark_table.table_commit import (
    CommitDecision,
    app_id,
    committed_name,
    decide,
    decode_marker,
    encode_marker,
    marker_path,
    staging_dir,
)


@pytest.mark.parametrize(
    ("committed", "checkpoint_id", "decision"),
    [
        (None, 1, CommitDecision.COMMIT),
        (3, 4, CommitDecision.COMMIT),
        (4, 4, CommitDecision.SKIP),  # a replay of the last commit
        (5, 4, CommitDecision.SKIP),  # a replay of an older one
    ],
)
def test_a_checkpoint_at_or_below_the_marker_is_skipped(committed, checkpoint_id, decision):
    assert decide(committed, checkpoint_id) is decision


def test_committed_names_carry_the_app_checkpoint_and_subtask_and_differ_for_each():
    app = app_id("job1", "sink")
    names = {committed_name(app, c, s, i) for c in (1, 2) for s in (0, 1) for i in (0, 1)}
    assert len(names) == 8
    assert committed_name(app, 7, 1, 0) == committed_name(app, 7, 1, 0)  # a replay: the same
    assert committed_name(app, 7, 1, 0).startswith(f"part-{app}-0000000007-00001-")


def test_an_app_id_is_a_file_name_and_two_uids_alike_once_made_safe_differ():
    a, b = app_id("job1", "out/a b"), app_id("job1", "out_a_b")
    assert "/" not in a and " " not in a
    assert a != b
    assert app_id("job2", "out_a_b") != b


def test_staging_and_marker_are_under_a_directory_spark_skips():
    for path in (staging_dir("/t", "app"), marker_path("/t", "app")):
        assert path.startswith("/t/_barrierflow/")


def test_a_marker_holds_its_checkpoint_and_one_not_ours_is_refused_by_name():
    assert decode_marker(encode_marker("app", 12), "m") == 12
    with pytest.raises(ValueError, match="the commit marker /t/m is not one barrierflow wrote"):
        decode_marker(b'{"other": 1}', "/t/m")
