"""What a declared type saves in serialization, with barrierflow's own codecs, in-process (no
Spark): ns per record of encode + decode.

- network: one buffer of records (1024 by default), pickled as an edge without a declared type
  sends it, and as an edge with one does (``protocol/buffer_codec.py``: MessagePack decoded to
  the declared type, which also validates it and runs no code from the bytes);
- state: one value at a time, as each access to RocksDB state writes and reads it, pickled and
  by the state's declared type (``state/value_codec.py``).

    python bench/typed_serialization.py --records 1024 --rounds 2000
"""

from __future__ import annotations

import argparse
import json
import pickle
import statistics
import time

from barrierflow.common import Types
from barrierflow.declared_types.msgpack_types import signature
from barrierflow.protocol.buffer_codec import BufferEncoder, decode_buffer
from barrierflow.state.value_codec import ValueCodec

SHAPES = {
    "long": (lambda i: i * 2654435761 % 100_000, Types.LONG()),
    "tuple(str,long)": (
        lambda i: (f"word{i % 5000}", i),
        Types.TUPLE([Types.STRING(), Types.LONG()]),
    ),
    "tuple(long,long,double)": (
        lambda i: (i, i * 7, i / 3),
        Types.TUPLE([Types.LONG(), Types.LONG(), Types.DOUBLE()]),
    ),
}  # fmt: skip


def _median_ns(run, per: int) -> float:
    samples = []
    for _ in range(5):
        started = time.perf_counter_ns()
        run()
        samples.append((time.perf_counter_ns() - started) / per)
    return round(statistics.median(samples), 1)


def buffers(encode, decode, buffer: list, rounds: int) -> float:
    def run() -> None:
        for _ in range(rounds):
            decode(encode(buffer))

    return _median_ns(run, rounds * len(buffer))


def values(encode, decode, buffer: list, rounds: int) -> float:
    def run() -> None:
        for _ in range(max(1, rounds // 10)):
            for value in buffer:
                decode(encode(value))

    return _median_ns(run, max(1, rounds // 10) * len(buffer))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=2000)
    args = parser.parse_args()

    def pickled(b):
        return pickle.dumps(b, protocol=5)

    for name, (make, type_info) in SHAPES.items():
        buffer = [make(i) for i in range(args.records)]
        encoder = BufferEncoder(type_info)
        codec = ValueCodec(signature(type_info))
        print(json.dumps({
            "shape": name,
            "network_ns_per_record": {
                "pickle": buffers(pickled, pickle.loads, buffer, args.rounds),
                "typed": buffers(encoder.encode, decode_buffer, buffer, args.rounds),
            },
            "network_bytes_per_buffer": {
                "pickle": len(pickled(buffer)), "typed": len(encoder.encode(buffer)),
            },
            "state_ns_per_value": {
                "pickle": values(pickle.dumps, pickle.loads, buffer, args.rounds),
                "typed": values(codec.encode, codec.decode, buffer, args.rounds),
            },
        }))  # fmt: skip


if __name__ == "__main__":
    main()
