"""Internal: the RocksDB state backend; a program chooses it in
``barrierflow.datastream.state_backend``.

The ``rocksdb`` keyed state backend: state in an embedded RocksDB per operator subtask; full
or incremental snapshots. ``backend.py`` is the entry; its module docstring maps the rest."""

from barrierflow.state.backends.rocksdb.backend import RocksDBKeyedStateBackend

__all__ = ["RocksDBKeyedStateBackend"]
