"""Kafka to Kafka through a keyed count: throughput and end-to-end latency per delivery guarantee.

N JSON events (``{"key": k, "ts": produce time in ns}``) from a topic of 2 partitions, counted
per key (K keys) at parallelism 2, each count written as JSON to a topic, a checkpoint every
second. Per guarantee (EXACTLY_ONCE, AT_LEAST_ONCE, NONE), two runs:

- throughput: the events are in the topic before the job starts; events/s over the job's
  processing time; its outputs are read back (and counted) once it finished, so that no
  reader shares the machine with it, as none does with ``ceiling.py kafka``;
- latency: the events are produced at ``--rate`` per second once the job runs (its first
  checkpoint completed); a
  ``read_committed`` consumer takes, for each output, the time from its event's produce to its
  committed read (p50, p99).

Every line also gives the peak RSS of the process tree during the run (driver, Spark JVM,
Python workers; the broker not counted; ``peak_rss.py``).

    python bench/kafka_roundtrip.py
    python bench/kafka_roundtrip.py --events 200000 --rate 20000 --repeat 3
    python bench/kafka_roundtrip.py --bootstrap localhost:9092   # an existing cluster
    python bench/kafka_roundtrip.py --guarantees EXACTLY_ONCE --no-latency   # one run
    python bench/kafka_roundtrip.py --reinterpret --guarantees EXACTLY_ONCE --no-latency

``--reinterpret`` writes the input topic by key group (``KeyGroupPartitioner``, for the job's
parallelism) and reads it with ``DataStreamUtils.reinterpret_as_keyed_stream`` instead of
``key_by``: the count chained to the source, no shuffle between them.

Without ``--bootstrap`` it starts the ``noida-db`` test broker (``pip install noida-db``).
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from peak_rss import PeakRss, child_pids

from barrierflow.datastream import DataStreamUtils, StreamExecutionEnvironment
from barrierflow.datastream.connectors import DeliveryGuarantee
from barrierflow.datastream.connectors.kafka import (
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
    KeyGroupPartitioner,
)
from barrierflow.datastream.formats.json import (
    JsonRowDeserializationSchema,
    JsonRowSerializationSchema,
)
from barrierflow.datastream.functions import KeyedProcessFunction
from barrierflow.datastream.state import ValueStateDescriptor

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/servers: the test broker
from tests.servers.kafka import KafkaBroker, kafka_broker

PARTITIONS = 2
PARALLELISM = 2


def partitions(topic: str, events: int, keys: int, by_key_group: bool) -> list[int]:
    """The partition of each event: ``i % PARTITIONS``, or, ``by_key_group``, the one that the
    source subtask owning its key's key group reads (``KeyGroupPartitioner``)."""
    if not by_key_group:
        return [i % PARTITIONS for i in range(events)]
    partitioner = KeyGroupPartitioner(lambda event: event["key"], PARALLELISM)
    of_key = [partitioner.partition_of_key(k, topic, PARTITIONS) for k in range(keys)]
    return [of_key[i % keys] for i in range(events)]


class Count(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element(self, event, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        return ({"key": event["key"], "count": count, "ts": event["ts"]},)


def produce(
    broker: KafkaBroker,
    topic: str,
    events: int,
    keys: int,
    rate: float | None,
    partition_of: list[int] | None = None,
) -> None:
    """``partition_of``: each event's partition (``partitions``); default ``i % PARTITIONS``."""
    from confluent_kafka import Producer

    if partition_of is None:
        partition_of = partitions(topic, events, keys, by_key_group=False)

    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    start = time.monotonic()
    for i in range(events):
        if rate is not None and i % 100 == 0:
            ahead = start + i / rate - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
        value = json.dumps({"key": i % keys, "ts": time.time_ns()}).encode()
        while True:
            try:
                producer.produce(topic, value, partition=partition_of[i])
                break
            except BufferError:
                producer.poll(0.01)
        producer.poll(0)
    assert producer.flush(60) == 0


def consume_latencies(broker: KafkaBroker, topic: str, expected: int, out: list[float]) -> None:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": f"bench-{uuid.uuid4().hex}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    deadline = time.monotonic() + 600
    while len(out) < expected and time.monotonic() < deadline:
        for m in consumer.consume(1000, timeout=0.2):
            if m.error() is None:
                out.append((time.time_ns() - json.loads(m.value())["ts"]) / 1e6)
    consumer.close()


def run(
    broker: KafkaBroker,
    guarantee: DeliveryGuarantee,
    events: int,
    keys: int,
    rate: float | None,
    reinterpret: bool = False,
) -> dict:
    name = uuid.uuid4().hex[:8]
    source_topic = broker.create_topic(f"bench-in-{name}", PARTITIONS)
    sink_topic = broker.create_topic(f"bench-out-{name}", PARTITIONS)
    latencies: list[float] = []
    partition_of = partitions(source_topic, events, keys, by_key_group=reinterpret)
    producer = threading.Thread(
        target=produce,
        args=(broker, source_topic, events, keys, rate, partition_of),
        daemon=True,
    )
    if rate is None:
        producer.run()  # all events in the topic before the job starts
    stop = {(source_topic, p): partition_of.count(p) for p in range(PARTITIONS)}
    env = StreamExecutionEnvironment().set_parallelism(PARALLELISM)
    env.enable_checkpointing(1000)
    checkpoints = tempfile.mkdtemp(prefix="bench-kafka-")
    env.get_checkpoint_config().set_checkpoint_storage(checkpoints)
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(broker.bootstrap_servers)
        .set_topics(source_topic)
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .set_bounded(KafkaOffsetsInitializer.offsets(stop))
        .set_value_only_deserializer(JsonRowDeserializationSchema())
        .build()
    )
    sink = (
        KafkaSink.builder()
        .set_bootstrap_servers(broker.bootstrap_servers)
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder()
            .set_topic(sink_topic)
            .set_value_serialization_schema(JsonRowSerializationSchema())
            .build()
        )
        .set_delivery_guarantee(guarantee)
        .set_transactional_id_prefix(f"bench-{name}")
        .build()
    )
    events_in = env.from_source(source, "events")
    keyed = (
        DataStreamUtils.reinterpret_as_keyed_stream(events_in, lambda e: e["key"])
        if reinterpret
        else events_in.key_by(lambda e: e["key"])
    )
    keyed.process(Count()).sink_to(sink)
    consumer = threading.Thread(
        target=consume_latencies, args=(broker, sink_topic, events, latencies), daemon=True
    )
    if rate is not None:  # reads while the job runs; a throughput run's outputs after it
        consumer.start()
    client = env.execute_async(f"kafka-roundtrip-{guarantee.name}")
    if rate is not None:  # once every task runs: a first checkpoint completed
        while not glob.glob(f"{checkpoints}/*/chk-*/_metadata"):
            time.sleep(0.05)
        producer.start()
    result = client.get_job_execution_result().result()
    if rate is None:
        consumer.start()
    consumer.join(120)
    figures = {
        "guarantee": guarantee.name,
        "reinterpret": reinterpret,
        "events": events,
        "outputs_read": len(latencies),
    }
    if rate is None:
        figures["events_per_s"] = round(events / (result.processing_ms / 1000))
    else:
        q = statistics.quantiles(latencies, n=100)
        figures.update(rate=rate, latency_ms_p50=round(q[49], 1), latency_ms_p99=round(q[98], 1))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--latency-events", type=int, default=50_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--rate", type=float, default=10_000, help="events/s of latency runs")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--bootstrap", help="an existing Kafka cluster; default: start one")
    parser.add_argument(
        "--guarantees",
        default="EXACTLY_ONCE,AT_LEAST_ONCE,NONE",
        help="comma-separated delivery guarantees to run",
    )
    parser.add_argument("--no-latency", action="store_true", help="throughput runs only")
    parser.add_argument(
        "--reinterpret",
        action="store_true",
        help="input written by key group, read with reinterpret_as_keyed_stream (no key_by)",
    )
    args = parser.parse_args()
    try:
        guarantees = [DeliveryGuarantee[g.strip()] for g in args.guarantees.split(",")]
    except KeyError as e:
        raise SystemExit(
            f"--guarantees: no delivery guarantee {e}; choose from "
            f"{', '.join(g.name for g in DeliveryGuarantee)}"
        ) from None
    rates = [None] if args.no_latency else [None, args.rate]
    with contextlib.ExitStack() as stack:
        broker = (
            KafkaBroker(args.bootstrap) if args.bootstrap else stack.enter_context(kafka_broker())
        )
        servers = child_pids(os.getpid())  # the broker this script started: not measured
        results: dict[str, list[dict]] = {}
        for _ in range(args.repeat):
            for g in guarantees:
                for rate in rates:
                    events = args.events if rate is None else args.latency_events
                    with PeakRss(exclude=servers) as rss:
                        figures = run(broker, g, events, args.keys, rate, args.reinterpret)
                    figures["peak_rss_mib"] = rss.peak_mib
                    print(json.dumps(figures), flush=True)
                    results.setdefault(g.name, []).append(figures)
        summary = {}
        for g, runs in results.items():
            summary[g] = {
                k: statistics.median(r[k] for r in runs if k in r)
                for k in ("events_per_s", "latency_ms_p50", "latency_ms_p99", "peak_rss_mib")
                if any(k in r for r in runs)
            }
        print(json.dumps({"medians": summary}))


if __name__ == "__main__":
    main()
