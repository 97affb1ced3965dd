"""The async I/O operator with the harness: order in both modes, capacity, timeouts, retries,
watermarks, the end of input, and records in flight at a checkpoint called again after a
restore (at the same and at another parallelism). Calls are held by gates the test opens, so
that nothing depends on how long a call takes."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter

import pytest

from barrierflow.common import Time
from barrierflow.datastream.functions.async_io import (
    NO_RETRY_STRATEGY,
    AsyncFunction,
    AsyncFunctionDescriptor,
    AsyncRetryStrategy,
    empty_result_predicate,
    has_exception_predicate,
)
from barrierflow.eventtime.watermark_valve import MAX_WATERMARK
from barrierflow.graph.transformation import TransformationKind
from barrierflow.protocol.record_batch import RecordBatch
from barrierflow.runtime.operators import UserFunctionError
from barrierflow.testing.harness import OperatorHarness, operator

# Shared with the calls, which run on the operator's event loop (the harness copies functions).
OPEN: set = set()  # records whose call may complete
STARTED: Counter = Counter()  # calls started, per record
LOCK = threading.Lock()


@pytest.fixture(autouse=True)
def _reset():
    OPEN.clear()
    STARTED.clear()
    yield
    OPEN.clear()


def release(*records):
    with LOCK:
        OPEN.update(records)


class Gated(AsyncFunction):
    """Completes a record's call once the test released it, with (record, "done")."""

    async def async_invoke(self, value):
        with LOCK:
            STARTED[value] += 1
        while value not in OPEN:
            await asyncio.sleep(0.001)
        return [(value, "done")]


class FailsFirst(AsyncFunction):
    """Raises (or, with ``empty``, returns nothing) on the first ``failures`` attempts."""

    def __init__(self, failures: int, empty: bool = False) -> None:
        self.failures, self.empty = failures, empty

    async def async_invoke(self, value):
        with LOCK:
            STARTED[value] += 1
            attempt = STARTED[value]
        if attempt <= self.failures:
            if self.empty:
                return []
            raise ConnectionError(f"attempt {attempt} of {value}")
        return [value * 10]


class Hangs(AsyncFunction):
    async def async_invoke(self, value):
        await asyncio.sleep(3600)


class HangsWithDefault(Hangs):
    def timeout(self, value):
        return [("timed out", value)]


class Raises(AsyncFunction):
    async def async_invoke(self, value):
        raise KeyError(value)


class ReturnsNone(AsyncFunction):
    async def async_invoke(self, value):
        return None


def harness(function, ordered=False, capacity=100, timeout_ms=0, strategy=NO_RETRY_STRATEGY):
    mode = AsyncFunctionDescriptor.OutputMode
    descriptor = AsyncFunctionDescriptor(
        function,
        Time.milliseconds(timeout_ms),
        capacity,
        strategy,
        mode.ORDERED if ordered else mode.UNORDERED,
    )
    spec = operator(TransformationKind.ASYNC_WAIT, descriptor, uid="enrich")
    return OperatorHarness(spec)


def take(h, n_records, wait_s=10.0):
    """What the operator emits until ``n_records`` records came out: records and ("W", w)."""
    out: list = []
    deadline = time.monotonic() + wait_s
    while sum(1 for o in out if not (type(o) is tuple and o[0] == "W")) < n_records:
        assert time.monotonic() < deadline, f"only {out} came out"
        for item in h.take_completed(wait_s=0.5):
            if type(item) is RecordBatch:
                out.extend(item.values)
            else:
                out.append(("W", item))
    return out


def started(n):
    deadline = time.monotonic() + 10
    while sum(STARTED.values()) < n:
        assert time.monotonic() < deadline, f"{sum(STARTED.values())} calls started, not {n}"
        time.sleep(0.001)


def test_ordered_wait_emits_in_input_order_whatever_completes_first():
    h = harness(Gated(), ordered=True)
    assert h.process([0, 1, 2, 3]) == []  # results come later
    started(4)
    release(3, 2, 1)
    time.sleep(0.02)  # room for a wrong implementation to emit them
    assert h.operator.take_completed() == []  # nothing may overtake record 0
    release(0)
    assert take(h, 4) == [(i, "done") for i in range(4)]
    h.close()


def test_unordered_wait_emits_each_result_as_its_call_completes():
    h = harness(Gated())
    h.process([0, 1, 2])
    started(3)
    release(2)
    assert take(h, 1) == [(2, "done")]
    release(0)
    assert take(h, 1) == [(0, "done")]
    release(1)
    assert take(h, 1) == [(1, "done")]
    h.close()


def test_no_more_calls_run_than_the_capacity_and_the_operator_says_it_is_full():
    h = harness(Gated(), capacity=2)
    h.process([0, 1, 2, 3])
    started(2)
    time.sleep(0.05)  # room for a wrong third call to start; the assertion does not time it
    assert sum(STARTED.values()) == 2
    assert h.operator.full
    release(0)
    assert take(h, 1) == [(0, "done")]
    started(3)
    assert STARTED[2] == 1 and STARTED[3] == 0
    release(1, 2, 3)
    assert sorted(take(h, 3)) == [(1, "done"), (2, "done"), (3, "done")]
    assert not h.operator.full
    h.close()


def test_a_timed_out_call_fails_the_task_by_default_naming_the_record():
    h = harness(Hangs(), timeout_ms=20)
    h.process(["slow"])
    with pytest.raises(UserFunctionError, match=r"'enrich'.*'slow'.*TimeoutError"):
        take(h, 1)
    h.close()


def test_a_timed_out_call_gives_what_timeout_returns():
    h = harness(HangsWithDefault(), timeout_ms=20)
    h.process(["slow"])
    assert take(h, 1) == [("timed out", "slow")]
    h.close()


def test_a_failed_call_is_retried_as_the_strategy_says():
    strategy = AsyncRetryStrategy.fixed_delay(3, 1, None, has_exception_predicate)
    h = harness(FailsFirst(2), timeout_ms=10_000, strategy=strategy)
    h.process([1, 2])
    assert sorted(take(h, 2)) == [10, 20]
    assert STARTED == {1: 3, 2: 3}
    h.close()


def test_an_empty_result_is_retried_with_the_empty_result_predicate():
    strategy = AsyncRetryStrategy.fixed_delay(2, 1, empty_result_predicate, None)
    h = harness(FailsFirst(1, empty=True), timeout_ms=10_000, strategy=strategy)
    h.process([4])
    assert take(h, 1) == [40]
    assert STARTED == {4: 2}
    h.close()


def test_a_call_failing_beyond_its_retries_fails_the_task():
    strategy = AsyncRetryStrategy.exponential_backoff(1, 1, 5, 2.0, None, has_exception_predicate)
    h = harness(FailsFirst(5), timeout_ms=10_000, strategy=strategy)
    h.process([7])
    with pytest.raises(UserFunctionError, match=r"record 7: ConnectionError: attempt 2 of 7"):
        take(h, 1)
    assert STARTED == {7: 2}  # max_attempts is the number of retries, as in PyFlink
    h.close()


def test_a_call_that_raises_fails_the_task_naming_the_operator_and_the_record():
    h = harness(Raises())
    h.process([("k", 1)])
    with pytest.raises(UserFunctionError, match=r"'enrich'.*\('k', 1\): KeyError"):
        take(h, 1)
    h.close()


def test_a_result_that_is_not_a_list_fails_with_what_to_return():
    h = harness(ReturnsNone())
    h.process([1])
    with pytest.raises(UserFunctionError, match="The result of AsyncFunction cannot be none"):
        take(h, 1)
    h.close()


def test_a_result_that_is_not_a_list_fails_with_pyflinks_words():
    class ReturnsANumber(AsyncFunction):
        async def async_invoke(self, value):
            return 42

    h = harness(ReturnsANumber())
    h.process([1])
    with pytest.raises(UserFunctionError, match=r"should be of list type.*'ReturnsANumber'"):
        take(h, 1)
    h.close()


@pytest.mark.parametrize("ordered", [False, True])
def test_a_watermark_leaves_after_the_records_before_it_and_before_those_after(ordered):
    h = harness(Gated(), ordered=ordered)
    h.process_timed(["a"], [5])
    assert h.watermark(7) == ([], [])  # held behind "a"
    h.process_timed(["b"], [9])
    started(2)
    release("b")
    time.sleep(0.02)
    assert h.operator.take_completed() == []  # "b" may not overtake the watermark
    release("a")
    batches = []
    deadline = time.monotonic() + 10
    while len([i for i in batches if type(i) is RecordBatch]) < 2:
        assert time.monotonic() < deadline
        batches.extend(h.take_completed(wait_s=0.5))
    assert batches == [RecordBatch([("a", "done")], [5]), 7, RecordBatch([("b", "done")], [9])]
    h.close()


def test_the_end_of_input_waits_for_every_call():
    h = harness(Gated())
    h.process([1, 2, 3])
    started(3)
    threading.Timer(0.05, release, (1, 2, 3)).start()
    assert sorted(h.finish()) == [(1, "done"), (2, "done"), (3, "done")]
    h.close()


def test_the_end_of_time_waits_for_every_call_and_returns_their_outputs():
    h = harness(Gated(), ordered=True)
    h.process_timed([1, 2], [10, 20])
    release(1, 2)
    assert h.watermark(MAX_WATERMARK) == ([(1, "done"), (2, "done")], [10, 20])
    h.close()


def test_records_in_flight_at_a_checkpoint_are_called_again_after_a_restore():
    h = harness(Gated(), ordered=True, capacity=2)
    h.process_timed(["a", "b", "c", "d"], [1, 2, 3, 4])
    started(2)
    release("a")
    assert take(h, 1) == [("a", "done")]  # emitted before the barrier: not in the state
    state = h.snapshot(1)  # "b" in flight, "c" started or waiting, "d" waiting
    h.close()
    STARTED.clear()
    restored = h.restored(state)
    release("b", "c", "d")
    out = []
    deadline = time.monotonic() + 10
    while sum(map(len, out)) < 3:
        assert time.monotonic() < deadline
        out.extend(b for b in restored.take_completed(wait_s=0.5) if type(b) is RecordBatch)
    values = [v for b in out for v in b.values]
    stamps = [t for b in out for t in b.timestamps]
    assert values == [("b", "done"), ("c", "done"), ("d", "done")]
    assert stamps == [2, 3, 4]
    assert STARTED == {"b": 1, "c": 1, "d": 1}
    restored.close()


def test_records_in_flight_are_split_over_the_subtasks_of_a_rescaled_restore():
    h = harness(Gated())
    h.process(list(range(6)))
    started(6)
    state = h.snapshot(1)
    h.close()
    spec = h.spec
    subtasks = OperatorHarness.rescaled(spec, [state], parallelism=2)
    release(*range(6))
    outputs = [sorted(r for r, _ in take(s, 3)) for s in subtasks]
    assert sorted(outputs[0] + outputs[1]) == list(range(6))
    assert all(outputs)
    for s in subtasks:
        s.close()
