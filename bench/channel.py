"""Records/s through one channel between two processes: barrierflow's network stack (records
batched into pickled buffers, credit-based, over zmq TCP) against the naive design (each record
pickled and put on a multiprocessing.Queue).

    python bench/channel.py --records 2000000
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import random
import time

import zmq

from barrierflow.graph.transformation import PartitionerSpec, Partitioning
from barrierflow.protocol.frames import Kind
from barrierflow.runtime.network.input_gate import InputGate
from barrierflow.runtime.network.output import OutputChannel, ResultPartition

BUFFER = 1024


def _record(i: int) -> tuple:
    return (i % 100_000, i, "payload")


def _consume_barrierflow(endpoint_queue, result_queue, token: int) -> None:
    context = zmq.Context()
    gate = InputGate(context, 1, token, initial_credit=4)
    tcp, _ = gate.bind("127.0.0.1", f"bench-{token}")
    endpoint_queue.put(tcp)
    import pickle

    count = 0
    poller = zmq.Poller()
    poller.register(gate.socket, zmq.POLLIN)
    while True:
        item = gate.poll_next()
        if item is None:
            poller.poll(100)
            continue
        _, kind, payload = item
        if kind == Kind.BUFFER:
            count += len(pickle.loads(payload))
        elif kind == Kind.END_OF_PARTITION:
            break
    result_queue.put(count)
    gate.close()
    context.term()


def bench_barrierflow(n: int) -> float:
    token = random.getrandbits(63)
    endpoints, results = mp.Queue(), mp.Queue()
    consumer = mp.Process(target=_consume_barrierflow, args=(endpoints, results, token))
    consumer.start()
    context = zmq.Context()
    channel = OutputChannel(context, endpoints.get(), b"p", token, 0)
    partition = ResultPartition(PartitionerSpec(Partitioning.FORWARD), [channel], BUFFER, 128, "b")
    started = time.perf_counter()
    for lo in range(0, n, BUFFER):
        partition.emit([_record(i) for i in range(lo, min(n, lo + BUFFER))])
        while partition.backlogged:
            partition.receive_credits()
            if partition.backlogged:
                channel.socket.poll(10)
    partition.broadcast_event(Kind.END_OF_PARTITION)
    while partition.backlogged:
        partition.receive_credits()
        channel.socket.poll(10)
    received = results.get()
    elapsed = time.perf_counter() - started
    consumer.join()
    partition.close()
    context.term()
    assert received == n, received
    return n / elapsed


def _consume_queue(queue, result_queue) -> None:
    count = 0
    while queue.get() is not None:
        count += 1
    result_queue.put(count)


def bench_queue(n: int) -> float:
    queue, results = mp.Queue(maxsize=10_000), mp.Queue()
    consumer = mp.Process(target=_consume_queue, args=(queue, results))
    consumer.start()
    started = time.perf_counter()
    for i in range(n):
        queue.put(_record(i))
    queue.put(None)
    received = results.get()
    elapsed = time.perf_counter() - started
    consumer.join()
    assert received == n, received
    return n / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2_000_000)
    args = parser.parse_args()
    mp.set_start_method("spawn")
    print(
        json.dumps(
            {
                "records": args.records,
                "barrierflow_channel_records_per_s": round(bench_barrierflow(args.records)),
                "per_record_pickle_queue_records_per_s": round(bench_queue(args.records // 10)),
            }
        )
    )


if __name__ == "__main__":
    main()
