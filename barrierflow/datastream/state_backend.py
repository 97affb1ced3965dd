"""PyFlink's ``pyflink.datastream.state_backend``: the state backends a job can choose."""

from barrierflow.state_backend import (
    EmbeddedRocksDBStateBackend,
    HashMapStateBackend,
    StateBackend,
)

__all__ = ["EmbeddedRocksDBStateBackend", "HashMapStateBackend", "StateBackend"]
