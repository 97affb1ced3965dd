"""What the run-time check of a stream reinterpreted as keyed costs per record, in-process (no
Spark): the keyed process operator on a batch of records, its function doing nothing, with and
without the check (``runtime/operators/key_group_check.py``), its keys seen before (the check
hashes a key once, then looks it up); and the key selector the window operator takes, wrapped
and not. Prints ns per record, the best of the rounds.

    python bench/key_group_check.py --records 100000 --keys 100 --rounds 15
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from barrierflow.datastream.functions.one_input import KeyedProcessFunction
from barrierflow.graph.transformation import TransformationKind
from barrierflow.protocol.key_group_range import KeyGroupRange
from barrierflow.protocol.record_batch import RecordBatch
from barrierflow.runtime.operators.key_group_check import KeyGroupCheck
from barrierflow.testing.harness import OperatorHarness, operator


class Nothing(KeyedProcessFunction):
    def process_element(self, value: Any, ctx: Any) -> None:
        return None


def _best_ns(run: Callable[[], object], per: int, rounds: int) -> float:
    run()  # warm: every key seen
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best / per * 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    values = [(i % args.keys, i) for i in range(args.records)]
    batch = RecordBatch(values)
    per_operator = {}
    for checks in (False, True):
        spec = operator(TransformationKind.PROCESS, Nothing(), key_selector=lambda r: r[0])
        harness = OperatorHarness(replace(spec, checks_key_groups=checks))
        op = harness.operator
        per_operator[checks] = _best_ns(
            lambda op=op: op.process_batch(batch), len(values), args.rounds
        )
        harness.close()
    select = lambda r: r[0]  # noqa: E731 - as a program's key selector
    checked = KeyGroupCheck(0, 1, 128, KeyGroupRange(0, 127)).checked(select)
    selectors = {
        name: _best_ns(lambda f=f: list(map(f, values)), len(values), args.rounds)
        for name, f in (("select", select), ("checked select", checked))
    }
    print(
        f"keyed process, {args.keys} keys: {per_operator[False]:.0f} ns/record without the "
        f"check, {per_operator[True]:.0f} with it "
        f"(+{per_operator[True] - per_operator[False]:.0f} ns)"
    )
    print(
        f"key selector alone: {selectors['select']:.0f} ns/record, wrapped (windows) "
        f"{selectors['checked select']:.0f}"
    )


if __name__ == "__main__":
    main()
