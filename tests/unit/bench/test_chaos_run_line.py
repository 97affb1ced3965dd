"""A campaign run prints one line, whatever its injectors said: the tally (and the campaign in
the test suite) reads a run's outcome on the line that starts with ``seed=``."""

from __future__ import annotations

from chaos_plan import FaultKind, PlannedFault, RunPlan
from chaos_run import Injection, RunResult
from chaos_verdict import Verdict

# What `barrierflow cancel -s` answered in seed 1091's second cancel, line breaks included.
REFUSED = (
    "injector failed: RuntimeError: cancel with a savepoint failed: Triggering a savepoint of "
    "job 438bb963f0b24ea3917a3dcf5df65e66 \n(chaos-broadcast)...\nSavepoint failed: savepoint 3 "
    "failed: attempt 1 is stopping\n"
)


def test_seeds_1062_and_1091_a_multiline_injector_error_keeps_the_run_on_one_line():
    fault = PlannedFault(FaultKind.CANCEL_WITH_SAVEPOINT, 0.4)
    plan = RunPlan(1091, "broadcast", "hashmap", "local", (fault,))
    injection = Injection(fault, 0.8, at=1.0, note=REFUSED, first_checkpoint_s=14.38)
    result = RunResult(plan, Verdict.EXACTLY_ONCE, "", [injection], 24)

    (line,) = result.line().splitlines()
    assert line.startswith("seed=1091 ") and line.endswith("outcome=exactly-once took=24s")
    assert "(chaos-broadcast)... Savepoint failed: savepoint 3 failed" in line


def test_a_multiline_reason_of_a_failed_run_stays_on_its_line():
    plan = RunPlan(7, "keyed_count", "hashmap", "local", ())
    result = RunResult(plan, Verdict.FAILED, "RuntimeError: first\nsecond", [], 3)

    (line,) = result.line().splitlines()
    assert "outcome=FAILED (RuntimeError: first second) took=3s" in line
