"""The pure parts of ``bench/rescale.py`` and ``bench/autoscale.py``: the downtime of a rescale
read from the committed output's processing-time stamps, the median and p99 of a few, and the
exactly-once check of a keyed count against the output a failure-free run commits. Performs no
I/O.

The keyed count counts values v under the key ``v % K``: the record of value v carries the
count of the values up to v of its key, which a failure-free run gives whatever the
parallelism (every value of a key reaches one subtask, in order). A value lost, processed
twice, or counted against the wrong state shows in those records; a value missing from the
output or committed twice shows in the values.
"""

from __future__ import annotations

import bisect
import math
import random
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


class NotExactlyOnce(AssertionError):
    """The committed output is not the one a failure-free run commits; the message says how."""


@dataclass(frozen=True)
class Gap:
    seconds: float
    after: float  # the last stamp before the gap (epoch seconds)
    before: float  # the first stamp after it


def largest_gap(stamps: Sequence[float], start: float, end: float) -> Gap | None:
    """The largest gap between consecutive ``stamps`` (sorted) that overlaps ``[start,
    end]``: a gap that began before ``start`` or ended after ``end`` counts whole. None: fewer
    than two stamps around the interval."""
    lo = max(0, bisect.bisect_left(stamps, start) - 1)
    hi = min(len(stamps), bisect.bisect_right(stamps, end) + 1)
    best: Gap | None = None
    for a, b in zip(stamps[lo : hi - 1], stamps[lo + 1 : hi], strict=True):
        if best is None or b - a > best.seconds:
            best = Gap(b - a, a, b)
    return best


def median_p99(values: Iterable[float]) -> tuple[float, float]:
    """The median, and the p99 by nearest rank: of fewer than 100 values, the largest."""
    ordered = sorted(values)
    if not ordered:
        return math.nan, math.nan
    rank = math.ceil(0.99 * len(ordered))
    return statistics.median(ordered), ordered[rank - 1]


def expected_count(value: int, keys: int) -> int:
    """The count a failure-free run emits with ``value``: how many of 1..value share its key
    ``value % keys``."""
    key = value % keys
    return (value - key) // keys + (1 if key else 0)


def check_keyed_counts(
    records: Iterable[Sequence], keys: int, expected_values: Iterable[int] | None = None
) -> int:
    """Raises ``NotExactlyOnce`` unless the records ``[key, value, count, ...]`` are, record
    by record, those of a failure-free run: each value of ``expected_values`` (None: 1..M for
    the largest M committed) once, with its key and its count. Returns how many were checked."""
    seen: Counter[int] = Counter()
    wrong: list[str] = []
    for record in records:
        key, value, count = record[0], record[1], record[2]
        seen[value] += 1
        if (key, count) != (value % keys, expected_count(value, keys)) and len(wrong) < 5:
            wrong.append(
                f"value {value}: key {key}, count {count}; a failure-free run gives key "
                f"{value % keys}, count {expected_count(value, keys)}"
            )
    expected = (
        set(expected_values)
        if expected_values is not None
        else set(range(1, max(seen, default=0) + 1))
    )
    missing = sorted(expected - seen.keys())
    extra = sorted(seen.keys() - expected)
    twice = sorted(v for v, n in seen.items() if n > 1)
    problems = [
        f"{len(missing)} values missing (first {missing[:5]})" if missing else "",
        f"{len(twice)} values committed more than once (first {twice[:5]})" if twice else "",
        f"{len(extra)} values never produced (first {extra[:5]})" if extra else "",
        f"{len(wrong)}+ records unlike a failure-free run's: {'; '.join(wrong)}" if wrong else "",
    ]
    problems = [p for p in problems if p]
    if problems:
        raise NotExactlyOnce(
            f"the committed output is not exactly once ({sum(seen.values())} records): "
            + "; ".join(problems)
        )
    return sum(seen.values())


def schedule(phases: Sequence[tuple[int, float]], noise: float = 0.0, seed: int = 1) -> list[int]:
    """Records to produce in each second, for phases of (seconds, rate a second): each
    second's rate drawn uniformly within ``±noise`` (a fraction) of its phase's, from ``seed``.
    Known before anything runs, so that the job's bounded source knows where the input ends."""
    draw = random.Random(seed)
    counts = []
    for seconds, rate in phases:
        for _ in range(seconds):
            counts.append(round(rate * (1 + draw.uniform(-noise, noise))) if noise else round(rate))
    return counts


@dataclass(frozen=True)
class LagAfter:
    """How far processing fell behind the input after a change of rate at ``start``."""

    peak_s: float  # the largest delay, produce to processing, of a record processed after start
    peak_at_s: float  # when (from start) the record with that delay was processed
    within_s: (
        float | None
    )  # from when (from start) every delay stayed within the bound; None: never


def lag_after(
    delays: Sequence[tuple[float, float]], start: float, end: float, bound_s: float
) -> LagAfter | None:
    """From ``(processed at, delay)`` pairs sorted by time: the peak of the delay of records
    processed in ``[start, end)``, and the time from which every delay up to ``end`` stayed
    within ``bound_s``. None: no record in the interval."""
    inside = [(at, delay) for at, delay in delays if start <= at < end]
    if not inside:
        return None
    peak_at, peak = max(inside, key=lambda p: p[1])
    within: float | None = None
    for at, delay in reversed(inside):
        if delay > bound_s:
            break
        within = at
    return LagAfter(peak, peak_at - start, None if within is None else within - start)
