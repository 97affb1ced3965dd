"""The life of one RocksDB instance on local disk: its options, its directory, writes in batches.

A backend owns ``<local_dir>``: the database in ``db/``, native checkpoints in ``checkpoints/``
(without local recovery), handles opened to copy rows out of in ``restore-scratch/``, SST files
built by a restore in ``restore-sst/``.

**Threading:** the task thread. **I/O:** the local directory.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable

from rocksdict import BlockBasedOptions, Cache, Options, Rdict, WriteBatch, WriteOptions

from barrierflow.state.backends.predefined_options import NO_TUNING, RocksDBTuning
from barrierflow.state.backends.rocksdb.state_objects import Table

MiB = 1 << 20
RESTORE_BATCH_BYTES = 4 * MiB  # a restore's write batches stay about this small
DB = "db"
CHECKPOINTS = "checkpoints"  # native checkpoints without local recovery (removed with the backend)
SCRATCH = "restore-scratch"  # handles opened to copy rows out of them
INGEST = "restore-sst"  # SST files a restore builds, moved into the database when ingested
OWN_ENTRIES = frozenset({DB, CHECKPOINTS, SCRATCH, INGEST})


def open_database(
    path: str, options: Options, write_options: WriteOptions, column_families: Iterable[str]
) -> Rdict:
    db = Rdict(path, options, column_families={cf: options for cf in column_families})
    db.set_write_options(write_options)
    return db


class BatchWriter:
    """Writes rows in batches of about ``RESTORE_BATCH_BYTES`` (restores)."""

    def __init__(self, db: Rdict) -> None:
        self._db = db
        self._batch = WriteBatch(raw_mode=True)

    def put(self, key: bytes, value: bytes, table: Table) -> None:
        self._batch.put(key, value, table.handle)
        if self._batch.size_in_bytes() >= RESTORE_BATCH_BYTES:
            self.flush()

    def flush(self) -> None:
        if len(self._batch):
            self._db.write(self._batch)
            self._batch = WriteBatch(raw_mode=True)


def claim(local_dir: str) -> None:
    """Makes ``local_dir`` an empty directory of this backend (see ``RocksDBKeyedStateBackend``)."""
    if os.path.isdir(local_dir):
        foreign = set(os.listdir(local_dir)) - OWN_ENTRIES
        if foreign:
            raise ValueError(
                f"RocksDB local directory {local_dir} holds files of something else "
                f"({', '.join(sorted(foreign)[:5])}); give each backend a directory of its own"
            )
        db_path = os.path.join(local_dir, DB)
        if os.path.isdir(db_path):
            try:
                # Takes RocksDB's lock first: refuses a database that is open, in this process
                # or another, instead of deleting its files under it.
                Rdict.destroy(db_path, Options(raw_mode=True))
            except Exception as e:  # rocksdict raises only plain Exception
                raise ValueError(
                    f"RocksDB local directory {local_dir} is in use ({e}); give each backend a "
                    "directory of its own"
                ) from e
        for entry in OWN_ENTRIES:
            shutil.rmtree(os.path.join(local_dir, entry), ignore_errors=True)
    os.makedirs(local_dir, exist_ok=True)


def db_options(
    block_cache_bytes: int,
    write_buffer_bytes: int,
    target_file_size_bytes: int = 64 * MiB,
    level_base_bytes: int = 256 * MiB,
    tuning: RocksDBTuning = NO_TUNING,
) -> Options:
    """Options of the database and of every column family (they share the block cache);
    ``tuning``'s other settings (a predefined option set's) where it sets them."""
    table = BlockBasedOptions()
    table.set_block_cache(Cache(block_cache_bytes))
    if tuning.block_size_bytes is not None:
        table.set_block_size(tuning.block_size_bytes)
    # Bloom filters: the first access of a new key is a miss that then skips every SST file.
    table.set_bloom_filter(10, False)
    # Index and filter blocks stay outside the block cache (about 1.3 bytes per key): the
    # cache is sharded into 1 MiB parts, and the filter of an SST file holding a million keys
    # is larger than that, so it was read again from the file on every get, 25x slower.
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    options.set_block_based_table_factory(table)
    options.set_write_buffer_size(write_buffer_bytes)
    options.set_db_write_buffer_size(2 * write_buffer_bytes)
    options.set_keep_log_file_num(2)
    options.set_target_file_size_base(target_file_size_bytes)
    options.set_max_bytes_for_level_base(level_base_bytes)
    _apply(tuning, options)
    return options


def _apply(tuning: RocksDBTuning, options: Options) -> None:
    setters = {
        "max_write_buffer_number": options.set_max_write_buffer_number,
        "min_write_buffer_number_to_merge": options.set_min_write_buffer_number_to_merge,
        "max_background_jobs": options.set_max_background_jobs,
        "max_open_files": options.set_max_open_files,
        "level_compaction_dynamic_level_bytes": options.set_level_compaction_dynamic_level_bytes,
    }
    for field, setter in setters.items():
        value = getattr(tuning, field)
        if value is not None:
            setter(value)
