"""What a declared type costs a state write, in-process: ``value()`` then ``update(v + 1)`` on
a heap ValueState, untyped and declared ``Types.LONG()`` / ``Types.INT()``, as the keyed
count's function does per event. Best of 7 repeats of 200 x 1,000 pairs.

Prints one JSON line: ns per pair for each, and each typed one's excess over untyped.

    python bench/typed_state_write.py
"""

from __future__ import annotations

import json
import timeit

from barrierflow.common import Types
from barrierflow.state.backends.hashmap import HeapKeyedStateBackend
from barrierflow.state.descriptors import ValueStateDescriptor
from barrierflow.state.key_groups import KeyGroupRange
from barrierflow.state.keyed_state_store import KeyedStateStore

PAIRS, NUMBER, REPEAT = 1_000, 200, 7


def ns_per_pair(type_info: object) -> float:
    backend = HeapKeyedStateBackend(128, KeyGroupRange(0, 127))
    backend.key_context.key = 5
    state = KeyedStateStore(backend).get_state(ValueStateDescriptor("count", type_info))

    def pairs() -> None:
        for _ in range(PAIRS):
            state.update((state.value() or 0) + 1)

    best = min(timeit.repeat(pairs, number=NUMBER, repeat=REPEAT))
    return best / NUMBER / PAIRS * 1e9


def main() -> None:
    untyped = ns_per_pair(None)
    figures = {"untyped_ns": round(untyped, 1)}
    for name in ("LONG", "INT"):
        typed = ns_per_pair(getattr(Types, name)())
        figures[f"{name.lower()}_ns"] = round(typed, 1)
        figures[f"{name.lower()}_excess_ns"] = round(typed - untyped, 1)
    print(json.dumps({"bench": "typed_state_write", **figures}), flush=True)


if __name__ == "__main__":
    main()
