"""The verdict on one campaign run, from what the run left (``RunFacts``) and the failure-free
reference: exactly-once, a clear error, a fallback, or FAILED. Kept apart from the runner,
which gathers the facts from processes and servers, so that the judgement can be tested on
hand-made outputs.

- Whatever the outcome, the job leaves no transaction prepared in its database (a job that
  ended for good settles what its sinks prepared).
- Whatever the outcome, every driver ended as it should: nothing of a killed driver's session
  outlived it; a leader paused past its lease exited with status 4, saying it lost its
  leadership, within a minute of waking, and no checkpoint of its epoch completed after its
  pause; any other driver ended with the job's status (0, or 3 for a job the campaign
  canceled), never with 4 (a leadership lost unpaused); and, job by job, the epochs of the
  completed checkpoints never go back (two live leaders would interleave them).
- No bad input: the last driver ended well and the committed output equals the reference,
  record by record (a record missing, duplicated or altered is FAILED).
- A poison record or a malformed Kafka message (every attempt meets it): the job failed,
  naming it, and what it committed before is part of the reference, once.
- Records missing, none duplicated or wrong, every one of them in the output topic past where
  ``read_committed`` readers stop, behind a transaction the broker never ended (the test
  broker's fault, bench/broker_transactions.py; Kafka ends every transaction), after a job
  that ended well (its sinks counted each commit done only once its commit group held it):
  broker-lost, said apart from FAILED. A record missing from the topic's log is FAILED.
- A corrupted state file: an older checkpoint restored (a driver's log says "falling back")
  with nothing lost or foreign (what the corrupted checkpoint had committed is committed
  again, as when Flink restores an older checkpoint), or no harm done; when the corrupted
  checkpoint was the only one retained, there is nothing to fall back to and the job must
  refuse to start from scratch, saying so, with what it committed part of the reference.

Performs no I/O.
"""

from __future__ import annotations

import enum
import itertools
from collections import Counter
from dataclasses import dataclass
from typing import Any

from chaos_plan import BadInput

Record = tuple[Any, ...]

FALLBACK_NOTE = "falling back"
ENDED_NOTE = "already ended"  # a standby that took the lease over after the job's end
REFUSAL_NOTE = "no retained checkpoint of this job can be read back"
REPLAY_REFUSED_NOTE = "written again after a restore of an older checkpoint"  # PostgresSink's


class Verdict(enum.Enum):
    EXACTLY_ONCE = "exactly-once"  # the committed output equals the reference
    CLEAR_ERROR = "clear-error"  # bad input: the job failed naming it, nothing else wrong
    FALLBACK = "fallback"  # a corrupt checkpoint: an older one restored, said so, none lost
    BROKER_LOST = "broker-lost"  # missing only behind a transaction the broker never ended
    FAILED = "FAILED"


@dataclass(frozen=True)
class DriverEnd:
    """How one driver process of a run ended."""

    number: int
    returncode: int | None
    killed: bool = False
    lingering: tuple[int, ...] = ()  # killed: processes of its session alive long after
    epoch: int | None = None  # the last epoch it led (high availability)
    paused_at: float | None = None  # SIGSTOPped then (epoch seconds)
    woke_to_end_s: float | None = None  # paused: from its SIGCONT to its end
    said_lost: bool = False  # it said it lost its leadership
    last_error: str = ""


@dataclass(frozen=True)
class CheckpointEpoch:
    """A completed checkpoint of one of the run's jobs, and the epoch of its leader."""

    job_id: str
    checkpoint_id: int
    epoch: int
    completed_at: float  # epoch seconds


@dataclass(frozen=True)
class RunFacts:
    """What a finished run left: how its last driver ended and what it wrote to standard
    error, whether any driver of the run fell back to an older checkpoint, and the committed
    output, sorted as the reference is."""

    returncode: int
    log: str
    committed: list[Record]
    fell_back: bool = False
    corrupted_sole_checkpoint: bool = False  # the corrupted checkpoint was the only one retained
    prepared_left: tuple[str, ...] = ()  # transactions left prepared in the run's database
    held_back: tuple[Record, ...] = ()  # in the output topic past where read_committed stops
    held_back_where: str = ""  # the partitions, where their readers stop, their ends
    drivers: tuple[DriverEnd, ...] = ()
    final_driver: int = 0  # the number of the driver whose end is ``returncode``
    checkpoints: tuple[CheckpointEpoch, ...] = ()


def judge(
    facts: RunFacts, expected: list[Record] | None, bad: BadInput | None
) -> tuple[Verdict, str]:
    """The run's verdict and, unless it is exactly-once, why. ``expected`` None: the run is
    the failure-free one that makes the reference, judged by its exit alone."""
    if expected is None:
        if facts.returncode != 0:
            return Verdict.FAILED, "the failure-free run failed: " + last_error(facts.log)
        return Verdict.EXACTLY_ONCE, ""
    if facts.prepared_left:
        # whatever the job's end, nothing may stay prepared holding locks (seed 1039)
        left = len(facts.prepared_left)
        return Verdict.FAILED, f"{left} prepared transactions left behind: {facts.prepared_left[0]}"
    wrong_end = driver_problem(facts)
    if wrong_end:
        return Verdict.FAILED, wrong_end
    if bad in (BadInput.POISON, BadInput.MALFORMED_KAFKA):
        return _judge_clear_error(bad, facts, expected)
    if facts.corrupted_sole_checkpoint and facts.returncode != 0:
        return _judge_refusal(facts, expected)
    if bad is BadInput.CORRUPT_STATE and facts.fell_back and facts.returncode != 0:
        return _judge_replay_refused(facts, expected)
    if facts.returncode != 0:
        return Verdict.FAILED, "the job failed: " + last_error(facts.log)
    if facts.committed == expected:
        return Verdict.EXACTLY_ONCE, ""
    if bad is BadInput.CORRUPT_STATE and facts.fell_back:
        return _judge_fallback(facts.committed, expected)
    if facts.held_back:
        return _judge_held_back(facts, expected)
    return Verdict.FAILED, difference(facts.committed, expected)


def driver_problem(facts: RunFacts) -> str | None:
    """The first driver that did not end as it should, and how; or two leaders' checkpoints
    interleaved; or None."""
    for d in facts.drivers:
        if d.lingering:
            return (
                f"driver {d.number} was killed, but {len(d.lingering)} processes of its session "
                f"still ran long after {list(d.lingering)[:5]}"
            )
        if d.paused_at is not None:
            problem = _paused_problem(d, facts.checkpoints)
            if problem:
                return problem
        elif (
            not d.killed
            and d.number != facts.final_driver
            and (d.returncode == 4 or d.returncode not in (0, 3, facts.returncode))
        ):
            return f"driver {d.number} exited {d.returncode}: {d.last_error}"
    return _interleaved(facts.checkpoints)


def _paused_problem(d: DriverEnd, checkpoints: tuple[CheckpointEpoch, ...]) -> str | None:
    """A leader paused past its lease must exit with status 4 once it wakes, saying it lost
    its leadership, within a minute, having completed no checkpoint since its pause."""
    if d.returncode != 4 or not d.said_lost:
        return (
            f"driver {d.number}, paused past its lease, exited {d.returncode}, not 4 saying it "
            f"lost its leadership: {d.last_error}"
        )
    if d.woke_to_end_s is None or d.woke_to_end_s > 60:
        return f"driver {d.number}, paused past its lease, ran on {d.woke_to_end_s} s after waking"
    late = [c for c in checkpoints if c.epoch == d.epoch and c.completed_at > d.paused_at]
    if late:
        return (
            f"driver {d.number} (epoch {d.epoch}) completed checkpoint {late[0].checkpoint_id} "
            "after it was paused past its lease"
        )
    return None


def _interleaved(checkpoints: tuple[CheckpointEpoch, ...]) -> str | None:
    """Job by job, in id order, the epochs of completed checkpoints never go back."""
    by_job: dict[str, list[CheckpointEpoch]] = {}
    for c in checkpoints:
        by_job.setdefault(c.job_id, []).append(c)
    for found in by_job.values():
        found.sort(key=lambda c: c.checkpoint_id)
        for before, after in itertools.pairwise(found):
            if after.epoch < before.epoch:
                return (
                    f"checkpoint {after.checkpoint_id} of epoch {after.epoch} completed after "
                    f"checkpoint {before.checkpoint_id} of epoch {before.epoch}: two leaders"
                )
    return None


def _judge_held_back(facts: RunFacts, expected: list[Record]) -> tuple[Verdict, str]:
    """Records a read_committed reader never reaches because a transaction before them never
    ended: the broker's loss, not the job's, only if nothing else is wrong and every missing
    record is among them."""
    have, want = Counter(facts.committed), Counter(expected)
    if have - want:
        return Verdict.FAILED, difference(facts.committed, expected)
    missing = want - have
    not_held = missing - Counter(facts.held_back)
    if not_held:
        return Verdict.FAILED, (
            f"{sum(not_held.values())} missing records are not in the topic at all "
            f"{sorted(not_held)[:3]}; " + difference(facts.committed, expected)
        )
    return Verdict.BROKER_LOST, (
        f"{sum(missing.values())} records missing, all in the topic past where read_committed "
        f"readers stop ({facts.held_back_where}): a transaction the broker never ended holds "
        "them back"
    )


def _judge_fallback(committed: list[Record], expected: list[Record]) -> tuple[Verdict, str]:
    """An older checkpoint restored in place of the corrupted one: what the corrupted one had
    committed is committed again (the sinks' transactions of a completed checkpoint are
    published, and the input is replayed from the older one), so duplicates are expected;
    a record missing or foreign is not."""
    have, want = Counter(committed), Counter(expected)
    if want - have or set(have) - set(want):
        return Verdict.FAILED, "after a fallback: " + difference(committed, expected)
    again = sum((have - want).values())
    return Verdict.FALLBACK, f"{again} records committed again from the older checkpoint"


def _judge_replay_refused(facts: RunFacts, expected: list[Record]) -> tuple[Verdict, str]:
    """A fallback replays what the corrupted checkpoint had committed (seed 7050); a sink whose
    table takes a row once (a primary key, a plain INSERT) then fails the job on the first of
    them. A clear error when the error says so and what was committed is part of the
    reference, once: nothing lost in silence, nothing written twice."""
    if REPLAY_REFUSED_NOTE not in facts.log:
        return Verdict.FAILED, "the job failed after a fallback: " + last_error(facts.log)
    return _nothing_beyond(facts.committed, expected)


def _judge_clear_error(
    bad: BadInput, facts: RunFacts, expected: list[Record]
) -> tuple[Verdict, str]:
    """Bad input that every attempt meets: the job must fail, naming it; what it committed
    before must be part of the reference, once."""
    needle = "poison record" if bad is BadInput.POISON else "cannot deserialize the message"
    if facts.returncode == 0:
        return Verdict.FAILED, f"the job ended well despite {bad.value}"
    if needle not in facts.log:
        return Verdict.FAILED, f"the error does not name the bad record: {last_error(facts.log)}"
    return _nothing_beyond(facts.committed, expected)


def _judge_refusal(facts: RunFacts, expected: list[Record]) -> tuple[Verdict, str]:
    """A corrupted file in the only checkpoint retained: no older one to fall back to, so the
    job must refuse to start from scratch (which would duplicate what it committed), saying
    so, with what it committed part of the reference, once."""
    if REFUSAL_NOTE not in facts.log:
        why = "the job failed without saying its checkpoint cannot be read back"
        return Verdict.FAILED, f"{why}: {last_error(facts.log)}"
    return _nothing_beyond(facts.committed, expected)


def _nothing_beyond(committed: list[Record], expected: list[Record]) -> tuple[Verdict, str]:
    surplus = Counter(committed) - Counter(expected)
    if surplus:
        return Verdict.FAILED, f"committed {sum(surplus.values())} records not in the reference"
    return Verdict.CLEAR_ERROR, ""


def difference(committed: list[Record], expected: list[Record]) -> str:
    """How the committed output differs from the reference: missing, duplicated, wrong."""
    have, want = Counter(committed), Counter(expected)
    missing = sorted((want - have).elements())
    extra = sorted((have - want).elements())
    duplicated = [r for r in extra if r in want]
    foreign = [r for r in extra if r not in want]
    return (
        f"{len(committed)} records for {len(expected)}: {len(missing)} missing {missing[:3]}, "
        f"{len(duplicated)} duplicated {duplicated[:3]}, {len(foreign)} wrong {foreign[:3]}"
    )


def last_error(log: str) -> str:
    """The last line of ``log`` that reads as an error (else its last line), on one line."""
    lines = log.strip().splitlines()
    errors = [line for line in lines if "failed" in line.lower() or "Error" in line]
    return (errors or lines or ["no output"])[-1][:300]


def one_line(text: str) -> str:
    """``text`` with its line breaks and runs of blanks made single spaces: a run's line must
    stay one line, or a reader of the campaign's output (``outcome=`` on the line that starts
    with ``seed=``) loses its outcome (seeds 1062 and 1091: an injector's multi-line error)."""
    return " ".join(text.split())
