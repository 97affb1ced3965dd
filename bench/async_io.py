"""Async I/O against a service with a fixed latency: the same call (an HTTP GET to a local
service that answers after ``--latency-ms``) made by ``AsyncDataStream.unordered_wait`` (and
``ordered_wait``) at ``--capacity`` calls in flight, and synchronously in a map, one after the
other in one run, at parallelism 1, with checkpoints every second.

Prints one JSON line per variant (records/s over the job's processing time, the service's
requests) and a last one with the ratios to the synchronous map.

    python bench/async_io.py --latency-ms 10 --capacity 100 --records 20000 --sync-records 500
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' service and client

from barrierflow.common import Time
from barrierflow.datastream import AsyncDataStream, StreamExecutionEnvironment
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from tests.jobs.http_enrichment import AsyncEnrich, SyncEnrich
from tests.servers.http_service import http_service


def run(variant: str, records: int, port: int, capacity: int) -> dict:
    env = StreamExecutionEnvironment().set_parallelism(1)
    env.enable_checkpointing(1000)
    env.get_checkpoint_config().set_checkpoint_storage(tempfile.mkdtemp(prefix="bench-async-"))
    numbers = env.from_source(NumberSequenceSource(1, records), "numbers")
    if variant == "sync map":
        enriched = numbers.map(SyncEnrich(port))
    else:
        wait = (
            AsyncDataStream.ordered_wait if variant == "ordered" else AsyncDataStream.unordered_wait
        )
        enriched = wait(numbers, AsyncEnrich(port), Time.seconds(30), capacity)
    enriched.sink_to(DiscardingSink())
    result = env.execute(f"async-io-{variant}")
    return {
        "variant": variant,
        "records": records,
        "records_per_s": round(records / (result.processing_ms / 1000), 1),
        "processing_s": result.processing_ms / 1000,
        "completed_checkpoints": result.num_completed_checkpoints,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=float, default=10)
    parser.add_argument("--capacity", type=int, default=100)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--sync-records", type=int, default=500)
    args = parser.parse_args()
    figures = {}
    with http_service(args.latency_ms / 1000) as service:
        for variant, records in (
            ("sync map", args.sync_records),
            ("unordered", args.records),
            ("ordered", args.records),
        ):
            before = service.requests
            line = run(variant, records, service.port, args.capacity)
            line.update(
                latency_ms=args.latency_ms,
                capacity=args.capacity,
                service_requests=service.requests - before,
            )
            figures[variant] = line["records_per_s"]
            print(json.dumps(line), flush=True)
    sync = figures["sync map"]
    print(
        json.dumps(
            {
                "unordered_over_sync": round(figures["unordered"] / sync, 1),
                "ordered_over_sync": round(figures["ordered"] / sync, 1),
                "ceiling_over_sync": round(args.capacity, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
