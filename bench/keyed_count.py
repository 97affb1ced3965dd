"""Keyed running count: N events with key ``(i * 2654435761) % K``, a count per key in
ValueState emitting ``(key, count)`` per event, a discarding sink.

Prints one JSON line: events/s (over the processing time, from all tasks running to all
finished), completed checkpoints, checkpoint duration median/max, checkpointed size, and the
peak RSS of the whole process tree (driver, Spark JVM, Python workers; ``peak_rss.py``).

    python bench/keyed_count.py --events 2000000 --keys 100000 --parallelism 2 --interval-ms 1000
    python bench/keyed_count.py --events 2000000 --keys 100000 --no-checkpointing
    python bench/keyed_count.py --events 4000000 --keys 2000000 \
        --state-backend rocksdb --incremental
    python bench/keyed_count.py --events 5000000 --keys 100000 --event-time
    python bench/keyed_count.py --events 5000000 --keys 100000 --typed
    python bench/keyed_count.py --events 2000000 --keys 100000 --state-backend rocksdb --typed
    python bench/keyed_count.py --events 5000000 --keys 100000 --typed-state

``--event-time`` gives every event a timestamp (monotonous watermarks) before the key_by: the
records travel with their timestamps, which is what event time costs a job that uses no window.
``--typed`` declares the map's and the count's output types (``Types.LONG()``, a TUPLE of two
LONGs) and the count state's (``Types.LONG()``), as a PyFlink program does: what converting
values to declared types costs, and what the serializers they pick save (with RocksDB, each
state access encodes or decodes a value). ``--typed-state`` declares the count state's type
alone: what the check of a typed state costs, with no output type converted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time

from peak_rss import PeakRss

from barrierflow.common import Types, WatermarkStrategy
from barrierflow.datastream import CheckpointingMode, StreamExecutionEnvironment
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.functions import KeyedProcessFunction
from barrierflow.datastream.state import ValueStateDescriptor


class Count(KeyedProcessFunction):
    state_type = None  # a class attribute: an instance attribute set before pickling slows
    # every ``self.count`` lookup of the unpickled function (about 5% of this job)

    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", self.state_type))

    def process_element(self, key, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        return ((key, count),)


class TypedCount(Count):
    state_type = Types.LONG()


def verify(metadata_path: str | None, events: int, keys: int) -> None:
    """Restores the final checkpoint's keyed state into one backend and checks the counts."""
    from barrierflow.checkpoint.state_streams import StorageRestoreStreams
    from barrierflow.checkpoint.storage import CheckpointDirectory, locate_snapshot
    from barrierflow.protocol.key_group_range import KeyGroupRange
    from barrierflow.state.backends.hashmap import HeapKeyedStateBackend

    if metadata_path is None:
        raise SystemExit("--verify needs checkpointing")
    root, metadata = locate_snapshot(metadata_path)
    storage = CheckpointDirectory(root)
    (op,) = [o for o in metadata.operators if any(s.keyed_state for s in o.subtasks)]
    full_range = KeyGroupRange(0, op.max_parallelism - 1)
    backend = HeapKeyedStateBackend(op.max_parallelism, full_range)
    handles = [h for s in op.subtasks for h in s.keyed_state]
    backend.restore(handles, StorageRestoreStreams(storage, shares_storage=False))
    counts = backend._tables["count"].data
    assert len(counts) == keys, f"{len(counts)} keys in the final checkpoint, expected {keys}"
    assert sum(counts.values()) == events, f"counts add up to {sum(counts.values())}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2_000_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--interval-ms", type=int, default=1000)
    parser.add_argument("--mode", choices=["exactly-once", "at-least-once"], default="exactly-once")
    parser.add_argument("--no-checkpointing", action="store_true")
    parser.add_argument("--checkpoint-dir", default=None)
    parser.add_argument("--state-backend", choices=["hashmap", "rocksdb"], default="hashmap")
    parser.add_argument("--incremental", action="store_true", help="incremental checkpoints")
    parser.add_argument("--event-time", action="store_true", help="events carry timestamps")
    parser.add_argument("--typed", action="store_true", help="declared output and state types")
    parser.add_argument("--typed-state", action="store_true", help="the state's type alone")
    parser.add_argument(
        "--verify",
        action="store_true",
        help="check that the final checkpoint's counts add up to --events over --keys keys",
    )
    args = parser.parse_args()

    keys = args.keys
    env = StreamExecutionEnvironment().set_parallelism(args.parallelism)
    env.configure(
        {
            "state.backend.type": args.state_backend,
            "execution.checkpointing.incremental": args.incremental,
        }
    )
    if not args.no_checkpointing:
        mode = (
            CheckpointingMode.EXACTLY_ONCE
            if args.mode == "exactly-once"
            else CheckpointingMode.AT_LEAST_ONCE
        )
        env.enable_checkpointing(args.interval_ms, mode)
        storage = args.checkpoint_dir or tempfile.mkdtemp(prefix="barrierflow-bench-")
        env.get_checkpoint_config().set_checkpoint_storage(storage)
    events = env.from_source(NumberSequenceSource(0, args.events - 1), "events")
    if args.event_time:
        events = events.assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda i, _: i)
        )
    key_type = Types.LONG() if args.typed else None
    count_type = Types.TUPLE([Types.LONG(), Types.LONG()]) if args.typed else None
    (
        events.map(lambda i: (i * 2654435761) % keys, output_type=key_type)
        .key_by(lambda k: k)
        .process(
            TypedCount() if args.typed or args.typed_state else Count(), output_type=count_type
        )
        .sink_to(DiscardingSink())
    )
    started = time.monotonic()
    with PeakRss() as rss:
        result = env.execute("keyed-count")
    wall_s = time.monotonic() - started
    completed = [c for c in result.checkpoint_history if c.status.value == "COMPLETED"]
    durations = [c.duration_ms for c in completed]
    if args.verify:
        verify(result.final_checkpoint, args.events, keys)
    print(
        json.dumps(
            {
                "events": args.events,
                "keys": keys,
                "parallelism": args.parallelism,
                "state_backend": args.state_backend,
                "incremental": args.incremental,
                "checkpointing": not args.no_checkpointing,
                "event_time": args.event_time,
                "typed": args.typed,
                "typed_state": args.typed or args.typed_state,
                "mode": None if args.no_checkpointing else args.mode,
                "interval_ms": args.interval_ms,
                "events_per_s": round(args.events / (result.processing_ms / 1000)),
                "processing_s": result.processing_ms / 1000,
                "wall_s": round(wall_s, 2),
                "completed_checkpoints": result.num_completed_checkpoints,
                "failed_checkpoints": result.num_failed_checkpoints,
                "checkpoint_ms_median": round(statistics.median(durations), 1)
                if durations
                else None,
                "checkpoint_ms_max": round(max(durations), 1) if durations else None,
                "state_bytes_last": completed[-1].state_size if completed else 0,
                "checkpointed_bytes_median": round(
                    statistics.median(c.checkpointed_size for c in completed)
                )
                if completed
                else 0,
                "peak_rss_mib": rss.peak_mib,
            }
        )
    )


if __name__ == "__main__":
    main()
