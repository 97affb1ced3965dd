"""Keyed tumbling event-time window count: N events with key ``(i * 2654435761) % K`` and event
time ``i / events-per-ms`` milliseconds (in order), bounded-out-of-orderness watermarks, a count
per key and window (``reduce``), a discarding sink. With the defaults (K = 100,000, 1,000 events
per millisecond, 1 s windows) each window holds about 10 events per key, so every tenth event
opens a window and registers its timer.

Prints one JSON line: events/s (over the processing time), windows fired, completed checkpoints,
checkpoint duration median/max, checkpointed size, peak RSS of the process tree (``peak_rss.py``).

    python bench/windows.py --events 2000000 --keys 100000 --parallelism 2 --interval-ms 1000
    python bench/windows.py --events 2000000 --keys 100000 --state-backend rocksdb --incremental
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time

from peak_rss import PeakRss

from barrierflow.common import Duration, Time, WatermarkStrategy
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.window import TumblingEventTimeWindows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2_000_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--events-per-ms", type=int, default=1000)
    parser.add_argument("--window-ms", type=int, default=1000)
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--interval-ms", type=int, default=1000)
    parser.add_argument("--no-checkpointing", action="store_true")
    parser.add_argument("--state-backend", choices=["hashmap", "rocksdb"], default="hashmap")
    parser.add_argument("--incremental", action="store_true", help="incremental checkpoints")
    args = parser.parse_args()

    keys, per_ms = args.keys, args.events_per_ms
    env = StreamExecutionEnvironment().set_parallelism(args.parallelism)
    env.configure(
        {
            "state.backend.type": args.state_backend,
            "execution.checkpointing.incremental": args.incremental,
        }
    )
    if not args.no_checkpointing:
        env.enable_checkpointing(args.interval_ms)
        env.get_checkpoint_config().set_checkpoint_storage(
            tempfile.mkdtemp(prefix="barrierflow-bench-")
        )
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(100)
    ).with_timestamp_assigner(lambda event, _: event[1])
    (
        env.from_source(NumberSequenceSource(0, args.events - 1), "events")
        .map(lambda i: ((i * 2654435761) % keys, i // per_ms))
        .assign_timestamps_and_watermarks(strategy)
        .key_by(lambda event: event[0])
        .window(TumblingEventTimeWindows.of(Time.milliseconds(args.window_ms)))
        .reduce(lambda a, b: (a[0], a[1]))  # the key, and one of the timestamps
        .sink_to(DiscardingSink())
    )
    started = time.monotonic()
    with PeakRss() as rss:
        result = env.execute("windows")
    wall_s = time.monotonic() - started
    completed = [c for c in result.checkpoint_history if c.status.value == "COMPLETED"]
    durations = [c.duration_ms for c in completed]
    print(
        json.dumps(
            {
                "events": args.events,
                "keys": keys,
                "events_per_ms": per_ms,
                "window_ms": args.window_ms,
                "parallelism": args.parallelism,
                "state_backend": args.state_backend,
                "incremental": args.incremental,
                "checkpointing": not args.no_checkpointing,
                "interval_ms": args.interval_ms,
                "events_per_s": round(args.events / (result.processing_ms / 1000)),
                "processing_s": result.processing_ms / 1000,
                "wall_s": round(wall_s, 2),
                "completed_checkpoints": result.num_completed_checkpoints,
                "checkpoint_ms_median": round(statistics.median(durations), 1)
                if durations
                else None,
                "checkpoint_ms_max": round(max(durations), 1) if durations else None,
                "checkpointed_bytes_median": round(
                    statistics.median(c.checkpointed_size for c in completed)
                )
                if completed
                else 0,
                "state_bytes_last": completed[-1].state_size if completed else 0,
                "peak_rss_mib": rss.peak_mib,
            }
        )
    )


if __name__ == "__main__":
    main()
