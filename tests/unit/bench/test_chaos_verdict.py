"""The campaign's verdicts on hand-made runs: a committed output is compared with the
failure-free reference record by record, and bad input must end in a clear error or a
fallback, never in a silent loss."""

from __future__ import annotations

import pytest
from chaos_plan import BadInput
from chaos_verdict import CheckpointEpoch, DriverEnd, RunFacts, Verdict, judge

REFERENCE = [("a", 1), ("b", 2), ("c", 3), ("d", 4)]
POISON_ERROR = "Job failed: poison record 4000 in Map (1/2): ValueError: poison"
MALFORMED_ERROR = "Job failed: cannot deserialize the message at offset 12 of chaos-in"
REFUSAL = "Job failed: no retained checkpoint of this job can be read back (see the errors above)"


def _ended_well(committed, **facts) -> RunFacts:
    return RunFacts(returncode=0, log="", committed=committed, **facts)


def _failed(log, committed=(), **facts) -> RunFacts:
    return RunFacts(returncode=1, log=log, committed=list(committed), **facts)


# --- no bad input: exactly-once or FAILED ---------------------------------------------------


def test_the_reference_output_is_exactly_once():
    assert judge(_ended_well(list(REFERENCE)), REFERENCE, None) == (Verdict.EXACTLY_ONCE, "")


@pytest.mark.parametrize(
    ("committed", "says"),
    [
        (REFERENCE[:-1], "1 missing [('d', 4)]"),
        ([*REFERENCE, ("b", 2)], "1 duplicated [('b', 2)]"),
        ([*REFERENCE[:-1], ("d", 5)], "1 wrong [('d', 5)]"),
    ],
    ids=["missing", "duplicated", "altered"],
)
def test_a_missing_duplicated_or_altered_record_fails_the_run(committed, says):
    verdict, reason = judge(_ended_well(sorted(committed)), REFERENCE, None)
    assert verdict is Verdict.FAILED and says in reason


def test_a_job_that_failed_fails_the_run_with_its_error():
    log = "INFO Completed checkpoint 3\nJob failed: AWS Error NETWORK_CONNECTION during GetObject"
    verdict, reason = judge(_failed(log, REFERENCE), REFERENCE, None)
    assert verdict is Verdict.FAILED and "NETWORK_CONNECTION" in reason


def test_the_failure_free_run_is_judged_by_its_exit_alone():
    assert judge(_ended_well([("x",)]), None, None) == (Verdict.EXACTLY_ONCE, "")
    assert judge(_failed("Job failed: boom"), None, None)[0] is Verdict.FAILED


# --- bad input that every attempt meets: a clear error ----------------------------------------


@pytest.mark.parametrize(
    ("bad", "log"),
    [(BadInput.POISON, POISON_ERROR), (BadInput.MALFORMED_KAFKA, MALFORMED_ERROR)],
)
def test_bad_input_named_with_part_of_the_reference_committed_is_a_clear_error(bad, log):
    assert judge(_failed(log, REFERENCE[:2]), REFERENCE, bad) == (Verdict.CLEAR_ERROR, "")


def test_bad_input_the_job_ended_well_despite_fails_the_run():
    verdict, reason = judge(_ended_well(list(REFERENCE)), REFERENCE, BadInput.POISON)
    assert verdict is Verdict.FAILED and "ended well despite poison" in reason


def test_bad_input_the_error_does_not_name_fails_the_run():
    verdict, reason = judge(_failed("Job failed: timeout"), REFERENCE, BadInput.MALFORMED_KAFKA)
    assert verdict is Verdict.FAILED and "does not name the bad record" in reason


def test_bad_input_with_a_record_committed_twice_fails_the_run():
    committed = [REFERENCE[0], REFERENCE[0]]
    verdict, reason = judge(_failed(POISON_ERROR, committed), REFERENCE, BadInput.POISON)
    assert verdict is Verdict.FAILED and "1 records not in the reference" in reason


# --- a corrupted state file: a fallback, or a refusal when it was the only checkpoint ---------


def test_a_fallback_said_in_the_log_with_what_was_committed_again_is_a_fallback():
    committed = sorted([*REFERENCE, ("c", 3)])
    verdict, reason = judge(
        _ended_well(committed, fell_back=True), REFERENCE, BadInput.CORRUPT_STATE
    )
    assert verdict is Verdict.FALLBACK and reason.startswith("1 records committed again")


def test_seed_7050_a_fallback_whose_replay_the_sink_refuses_naming_why_is_a_clear_error():
    log = (
        "WARNING chk-5/sink.op is corrupt; falling back to an older checkpoint\n"
        "Job failed: PostgresSink: PostgreSQL refused record (1, 1025, 263169) ...: "
        "UniqueViolation: duplicate key value ... If it is a row written again after a restore "
        "of an older checkpoint than the job's latest ..."
    )
    facts = _failed(log, REFERENCE[:3], fell_back=True)
    assert judge(facts, REFERENCE, BadInput.CORRUPT_STATE) == (Verdict.CLEAR_ERROR, "")
    twice = _failed(log, [*REFERENCE[:3], REFERENCE[0]], fell_back=True)
    assert judge(twice, REFERENCE, BadInput.CORRUPT_STATE)[0] is Verdict.FAILED
    other = _failed("Job failed: boom", REFERENCE[:3], fell_back=True)
    verdict, reason = judge(other, REFERENCE, BadInput.CORRUPT_STATE)
    assert verdict is Verdict.FAILED and "after a fallback" in reason


def test_a_fallback_that_lost_a_record_fails_the_run():
    verdict, reason = judge(
        _ended_well(REFERENCE[1:], fell_back=True), REFERENCE, BadInput.CORRUPT_STATE
    )
    assert verdict is Verdict.FAILED and "1 missing" in reason


def test_a_fallback_that_committed_a_wrong_record_fails_the_run():
    committed = sorted([*REFERENCE, ("e", 9)])
    verdict, reason = judge(
        _ended_well(committed, fell_back=True), REFERENCE, BadInput.CORRUPT_STATE
    )
    assert verdict is Verdict.FAILED and "1 wrong" in reason


def test_duplicates_without_a_fallback_in_the_log_fail_the_run():
    committed = sorted([*REFERENCE, ("c", 3)])
    verdict, _ = judge(_ended_well(committed), REFERENCE, BadInput.CORRUPT_STATE)
    assert verdict is Verdict.FAILED


def test_a_corruption_that_did_no_harm_is_exactly_once():
    verdict, _ = judge(_ended_well(list(REFERENCE)), REFERENCE, BadInput.CORRUPT_STATE)
    assert verdict is Verdict.EXACTLY_ONCE


def test_the_only_checkpoint_retained_corrupted_expects_the_jobs_refusal():
    facts = _failed(REFUSAL, REFERENCE[:1], corrupted_sole_checkpoint=True)
    assert judge(facts, REFERENCE, BadInput.CORRUPT_STATE) == (Verdict.CLEAR_ERROR, "")


def test_the_only_checkpoint_corrupted_and_a_failure_that_is_no_refusal_fails_the_run():
    facts = _failed("Job failed: boom", corrupted_sole_checkpoint=True)
    verdict, reason = judge(facts, REFERENCE, BadInput.CORRUPT_STATE)
    assert verdict is Verdict.FAILED and "without saying its checkpoint cannot be read" in reason


def test_a_refusal_after_committing_a_record_twice_fails_the_run():
    facts = _failed(REFUSAL, [REFERENCE[0]] * 2, corrupted_sole_checkpoint=True)
    assert judge(facts, REFERENCE, BadInput.CORRUPT_STATE)[0] is Verdict.FAILED


def test_the_only_checkpoint_corrupted_and_a_job_that_ended_well_is_judged_by_its_output():
    facts = _ended_well(REFERENCE[:3], corrupted_sole_checkpoint=True)
    assert judge(facts, REFERENCE, BadInput.CORRUPT_STATE)[0] is Verdict.FAILED


def test_a_transaction_left_prepared_fails_the_run_whatever_its_output():
    gid = "barrierflow:chaos-kafka_to_postgres:sink:1:2:1"
    facts = _failed(REFUSAL, REFERENCE[:1], corrupted_sole_checkpoint=True, prepared_left=(gid,))
    verdict, reason = judge(facts, REFERENCE, BadInput.CORRUPT_STATE)
    assert verdict is Verdict.FAILED and f"1 prepared transactions left behind: {gid}" in reason
    facts = _ended_well(list(REFERENCE), prepared_left=(gid,))
    assert judge(facts, REFERENCE, None)[0] is Verdict.FAILED


# --- records a transaction the broker never ended holds back (seed 5027) --------------------

WHERE = "partition 0 at offset 2050 of 5502"


def test_missing_records_all_held_back_by_the_broker_are_a_broker_loss_said_apart():
    facts = _ended_well(
        REFERENCE[:2], held_back=(("c", 3), ("d", 4), ("x", 9)), held_back_where=WHERE
    )
    verdict, reason = judge(facts, REFERENCE, None)
    assert verdict is Verdict.BROKER_LOST
    assert reason.startswith("2 records missing") and WHERE in reason


@pytest.mark.parametrize(
    ("committed", "held_back", "says"),
    [
        (REFERENCE[:2], (("c", 3),), "1 missing records are not in the topic at all [('d', 4)]"),
        ([*REFERENCE[:3], ("b", 2)], (("d", 4),), "1 duplicated [('b', 2)]"),
        ([*REFERENCE[:3], ("d", 5)], (("d", 4),), "1 wrong [('d', 5)]"),
    ],
    ids=["missing-from-the-topic", "duplicated", "altered"],
)
def test_a_loss_of_ours_beside_held_back_records_fails_the_run(committed, held_back, says):
    facts = _ended_well(sorted(committed), held_back=held_back, held_back_where=WHERE)
    verdict, reason = judge(facts, REFERENCE, None)
    assert verdict is Verdict.FAILED and says in reason


def test_held_back_records_after_a_job_that_failed_fail_the_run():
    facts = _failed("Job failed: boom", REFERENCE[:2], held_back=(("c", 3), ("d", 4)))
    assert judge(facts, REFERENCE, None)[0] is Verdict.FAILED


# --- drivers: killed, paused, standbys (driver high availability) -----------------------------

LOST = "Job suspended: this driver lost leadership to epoch 2 (this JobMaster led epoch 1)"


def _checkpoint(checkpoint_id, epoch, at, job="j"):
    return CheckpointEpoch(job, checkpoint_id, epoch, at)


def _ha_run(*drivers, checkpoints=(), committed=REFERENCE) -> RunFacts:
    final = max(d.number for d in drivers if not d.killed and d.paused_at is None)
    return RunFacts(
        returncode=0, log="", committed=list(committed), drivers=drivers, final_driver=final,
        checkpoints=checkpoints,
    )  # fmt: skip


PAUSED = DriverEnd(1, 4, epoch=1, paused_at=100.0, woke_to_end_s=2.5, said_lost=True)
TOOK_OVER = DriverEnd(2, 0, epoch=2)
CHECKPOINTS = (_checkpoint(1, 1, 99.0), _checkpoint(101, 2, 105.0), _checkpoint(102, 2, 106.0))


def test_a_standby_taking_over_from_a_paused_leader_that_exits_4_is_exactly_once():
    facts = _ha_run(PAUSED, TOOK_OVER, checkpoints=CHECKPOINTS)
    assert judge(facts, REFERENCE, None) == (Verdict.EXACTLY_ONCE, "")


@pytest.mark.parametrize(
    ("paused", "says"),
    [
        (DriverEnd(1, 0, epoch=1, paused_at=100.0, woke_to_end_s=9.0), "exited 0, not 4"),
        (DriverEnd(1, -9, epoch=1, paused_at=100.0), "exited -9, not 4"),
        (DriverEnd(1, 4, epoch=1, paused_at=100.0, woke_to_end_s=61, said_lost=True), "ran on"),
    ],
    ids=["ran-on-to-the-end", "never-exited", "slow-to-exit"],
)
def test_a_paused_leader_that_does_not_exit_4_soon_after_waking_fails_the_run(paused, says):
    verdict, reason = judge(_ha_run(paused, TOOK_OVER, checkpoints=CHECKPOINTS), REFERENCE, None)
    assert verdict is Verdict.FAILED and says in reason


def test_a_checkpoint_a_paused_leader_completed_after_its_pause_fails_the_run():
    late = (*CHECKPOINTS, _checkpoint(2, 1, 104.0))  # epoch 1 completed checkpoint 2 at 104
    verdict, reason = judge(_ha_run(PAUSED, TOOK_OVER, checkpoints=late), REFERENCE, None)
    assert verdict is Verdict.FAILED
    assert "epoch 1) completed checkpoint 2 after it was paused" in reason


def test_checkpoints_whose_epochs_go_back_are_two_leaders():
    interleaved = (_checkpoint(101, 2, 10.0), _checkpoint(102, 1, 11.0))
    facts = _ha_run(DriverEnd(1, 0, epoch=1), DriverEnd(2, 0, epoch=2), checkpoints=interleaved)
    verdict, reason = judge(facts, REFERENCE, None)
    assert verdict is Verdict.FAILED and "two leaders" in reason
    other_job = (_checkpoint(101, 2, 10.0), _checkpoint(1, 1, 11.0, job="another"))
    facts = _ha_run(DriverEnd(1, 0, epoch=1), DriverEnd(2, 0, epoch=2), checkpoints=other_job)
    assert judge(facts, REFERENCE, None) == (Verdict.EXACTLY_ONCE, "")


def test_a_killed_driver_whose_processes_outlive_it_fails_the_run():
    killed = DriverEnd(1, -9, killed=True, lingering=(4242, 4243), epoch=1)
    verdict, reason = judge(_ha_run(killed, TOOK_OVER), REFERENCE, None)
    assert verdict is Verdict.FAILED and "2 processes of its session still ran" in reason
    gone = DriverEnd(1, -9, killed=True, epoch=1)
    assert judge(_ha_run(gone, TOOK_OVER), REFERENCE, None) == (Verdict.EXACTLY_ONCE, "")


@pytest.mark.parametrize(("status", "ok"), [(0, True), (3, True), (4, False), (2, False)])
def test_a_standby_ends_with_the_jobs_status_never_with_a_leadership_lost(status, ok):
    # driver 1 waited as a standby and led once the job had ended (or lost its lease unpaused)
    standby = DriverEnd(1, status, epoch=3, said_lost=status == 4, last_error=LOST)
    verdict, reason = judge(_ha_run(standby, TOOK_OVER), REFERENCE, None)
    assert (verdict is Verdict.EXACTLY_ONCE) == ok
    if not ok:
        assert reason.startswith(f"driver 1 exited {status}")
