"""What a declared type costs a state write, in-process: ``value()`` then ``update(v + 1)`` on
a heap ValueState, untyped and declared ``Types.LONG()`` / ``Types.INT()``, as the keyed
count's function does per event; and LONG with values as large as a timestamp in
milliseconds (``long_wide``: ints of several CPython digits compare on a slower path). Best of
7 repeats of 200 x 1,000 pairs.

Prints one JSON line: ns per pair for each, and each typed one's excess over untyped (at the
same values).

    python bench/typed_state_write.py
"""

from __future__ import annotations

import json
import timeit

from barrierflow.common import Types
from barrierflow.protocol.key_group_range import KeyGroupRange
from barrierflow.state.backends.hashmap import HeapKeyedStateBackend
from barrierflow.state.descriptors import ValueStateDescriptor
from barrierflow.state.keyed_state_store import KeyedStateStore

PAIRS, NUMBER, REPEAT = 1_000, 200, 7


WIDE = 1_764_000_000_000  # a timestamp in milliseconds (2025)


def ns_per_pair(type_info: object, start: int = 0) -> float:
    backend = HeapKeyedStateBackend(128, KeyGroupRange(0, 127))
    backend.key_context.key = 5
    state = KeyedStateStore(backend).get_state(ValueStateDescriptor("count", type_info))
    state.update(start or None)

    def pairs() -> None:
        for _ in range(PAIRS):
            state.update((state.value() or 0) + 1)

    best = min(timeit.repeat(pairs, number=NUMBER, repeat=REPEAT))
    return best / NUMBER / PAIRS * 1e9


def main() -> None:
    untyped = ns_per_pair(None)
    untyped_wide = ns_per_pair(None, WIDE)
    figures = {"untyped_ns": round(untyped, 1), "untyped_wide_ns": round(untyped_wide, 1)}
    for label, type_info, start, base in (
        ("long", Types.LONG(), 0, untyped),
        ("int", Types.INT(), 0, untyped),
        ("long_wide", Types.LONG(), WIDE, untyped_wide),
    ):
        typed = ns_per_pair(type_info, start)
        figures[f"{label}_ns"] = round(typed, 1)
        figures[f"{label}_excess_ns"] = round(typed - base, 1)
    print(json.dumps({"bench": "typed_state_write", **figures}), flush=True)


if __name__ == "__main__":
    main()
