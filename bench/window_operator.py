"""The window operator alone, in one process (no Spark, no network): the per-record path,
firing and the two phases of a snapshot, as one window subtask of ``windows.py`` sees them
(half of its events and keys at parallelism 2: tumbling 1 s windows, ``reduce``, about 10
events per key and window). Prints one JSON line of nanoseconds per event.

    python bench/window_operator.py --events 1000000 --keys 50000
"""

from __future__ import annotations

import argparse
import json
import time

from barrierflow.checkpoint.state_streams import CheckpointStreams
from barrierflow.eventtime.watermark_valve import MAX_WATERMARK
from barrierflow.graph.transformation import TransformationKind
from barrierflow.protocol.checkpoint_barrier import CHECKPOINT
from barrierflow.protocol.record_batch import RecordBatch
from barrierflow.testing.harness import OperatorHarness, operator
from barrierflow.windowing.window_assigners import TumblingEventTimeWindows
from barrierflow.windowing.window_spec import Contents, WindowSpec
from barrierflow.windowing.window_triggers import default_trigger


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=50_000)
    parser.add_argument("--events-per-ms", type=int, default=500)
    parser.add_argument("--watermark-every", type=int, default=100, help="buffers")
    parser.add_argument("--checkpoint-every", type=int, default=500, help="buffers")
    args = parser.parse_args()

    n, keys, per_ms = args.events, args.keys, args.events_per_ms
    assigner = TumblingEventTimeWindows.of(1000)
    spec = WindowSpec(
        assigner, default_trigger(assigner), Contents.REDUCE, lambda a, b: (a[0], a[1])
    )
    h = OperatorHarness(operator(TransformationKind.WINDOW, spec, key_selector=lambda e: e[0]))
    op = h.operator
    batches = []
    for start in range(0, n, 1024):
        values = [
            ((i * 2654435761) % keys, i // per_ms) for i in range(start, min(n, start + 1024))
        ]
        batches.append(RecordBatch(values, [v[1] for v in values]))

    spent = {"records": 0.0, "firing": 0.0, "snapshot_sync": 0.0, "snapshot_async": 0.0}
    fired = snapshots = 0
    for i, batch in enumerate(batches, 1):
        t0 = time.perf_counter()
        op.process_batch(batch)
        t1 = time.perf_counter()
        spent["records"] += t1 - t0
        if i % args.watermark_every == 0:  # behind the events by the bench's 100 ms
            fired += len(op.on_watermark(batch.timestamps[-1] - 101).values)
            spent["firing"] += time.perf_counter() - t1
        if i % args.checkpoint_every == 0:
            t2 = time.perf_counter()
            snapshot = op.snapshot_state(i, CHECKPOINT)
            t3 = time.perf_counter()
            snapshot.keyed(CheckpointStreams(None, i, "windows", 0, 1, 1 << 30))
            spent["snapshot_sync"] += t3 - t2
            spent["snapshot_async"] += time.perf_counter() - t3
            snapshots += 1
    t0 = time.perf_counter()
    fired += len(op.on_watermark(MAX_WATERMARK).values)
    spent["firing"] += time.perf_counter() - t0
    h.close()
    print(
        json.dumps(
            {
                "events": n,
                "keys": keys,
                "path": "batch" if getattr(op, "_aligned", None) is not None else "general",
                "windows_fired": fired,
                "snapshots": snapshots,
                **{f"{part}_ns_per_event": round(s / n * 1e9) for part, s in spent.items()},
                "total_ns_per_event": round(sum(spent.values()) / n * 1e9),
            }
        )
    )


if __name__ == "__main__":
    main()
