"""What a declared type could save on the network: one buffer of records (1024 by default)
encoded and decoded with pickle, as barrierflow sends buffers today, and with msgspec's
MessagePack, untyped and decoding to the declared type (which also validates it, and runs no
code from the bytes, unlike pickle). In-process, no Spark: ns per record of encode + decode.

    python bench/typed_serialization.py --records 1024 --rounds 2000
"""

from __future__ import annotations

import argparse
import json
import pickle
import statistics
import time

import msgspec

SHAPES = {
    "long": (lambda i: i * 2654435761 % 100_000, int),
    "tuple(str,long)": (lambda i: (f"word{i % 5000}", i), tuple[str, int]),
    "tuple(long,long,double)": (lambda i: (i, i * 7, i / 3), tuple[int, int, float]),
}


def ns_per_record(encode, decode, buffer: list, rounds: int) -> float:
    samples = []
    for _ in range(5):
        started = time.perf_counter_ns()
        for _ in range(rounds):
            decode(encode(buffer))
        samples.append((time.perf_counter_ns() - started) / (rounds * len(buffer)))
    return round(statistics.median(samples), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=2000)
    args = parser.parse_args()
    for name, (make, python_type) in SHAPES.items():
        buffer = [make(i) for i in range(args.records)]
        encoder = msgspec.msgpack.Encoder()
        typed = msgspec.msgpack.Decoder(list[python_type])
        untyped = msgspec.msgpack.Decoder()
        results = {
            "pickle": ns_per_record(
                lambda b: pickle.dumps(b, protocol=5), pickle.loads, buffer, args.rounds
            ),
            "msgpack": ns_per_record(encoder.encode, untyped.decode, buffer, args.rounds),
            "msgpack_typed": ns_per_record(encoder.encode, typed.decode, buffer, args.rounds),
        }
        sizes = {
            "pickle": len(pickle.dumps(buffer, protocol=5)),
            "msgpack": len(encoder.encode(buffer)),
        }
        print(json.dumps({"shape": name, "records": args.records, "ns_per_record": results,
                          "bytes_per_buffer": sizes}))  # fmt: skip


if __name__ == "__main__":
    main()
