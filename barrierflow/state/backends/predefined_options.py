"""RocksDB's predefined option sets, PyFlink's ``PredefinedOptions``, as the RocksDB settings
each one changes (Flink's ``PredefinedOptions``, restricted to what rocksdict can set; see
docs/pyflink-compatibility.md). Performs no I/O.

Precedence, as in Flink: an option of ``state.backend.rocksdb.*`` set in the configuration wins
over the preset, which wins over barrierflow's defaults.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, TypedDict

_MiB = 1024**2


class PredefinedOptions(enum.Enum):
    """PyFlink's presets (and values). DEFAULT changes nothing; the others are Flink's choices
    for spinning disks, spinning disks with memory to spare, and flash SSDs."""

    DEFAULT = 0
    SPINNING_DISK_OPTIMIZED = 1
    SPINNING_DISK_OPTIMIZED_HIGH_MEM = 2
    FLASH_SSD_OPTIMIZED = 3


@dataclass(frozen=True)
class RocksDBTuning:
    """The settings a preset changes; None leaves barrierflow's (or RocksDB's) default."""

    block_cache_bytes: int | None = None
    block_size_bytes: int | None = None
    write_buffer_bytes: int | None = None
    max_write_buffer_number: int | None = None
    min_write_buffer_number_to_merge: int | None = None
    target_file_size_bytes: int | None = None
    level_base_bytes: int | None = None
    max_background_jobs: int | None = None
    max_open_files: int | None = None
    level_compaction_dynamic_level_bytes: bool | None = None


# Flink's settings of each preset. Level compaction (Flink sets it for the spinning-disk ones)
# is RocksDB's default style and barrierflow's, and the Bloom filter of HIGH_MEM (10 bits per
# key, full filters) is on in every barrierflow RocksDB already, so neither appears here.
NO_TUNING = RocksDBTuning()


class _ParallelFiles(TypedDict):
    """What two presets set alike: typed, so that they pass as ``RocksDBTuning``'s fields."""

    max_background_jobs: int
    max_open_files: int


_PARALLEL_FILES: _ParallelFiles = {"max_background_jobs": 4, "max_open_files": -1}
PRESETS: dict[PredefinedOptions, RocksDBTuning] = {
    PredefinedOptions.DEFAULT: NO_TUNING,
    PredefinedOptions.SPINNING_DISK_OPTIMIZED: RocksDBTuning(
        level_compaction_dynamic_level_bytes=True, **_PARALLEL_FILES
    ),
    PredefinedOptions.SPINNING_DISK_OPTIMIZED_HIGH_MEM: RocksDBTuning(
        block_cache_bytes=256 * _MiB,
        block_size_bytes=128 * 1024,
        write_buffer_bytes=64 * _MiB,
        max_write_buffer_number=4,
        min_write_buffer_number_to_merge=3,
        target_file_size_bytes=256 * _MiB,
        level_base_bytes=1024 * _MiB,
        level_compaction_dynamic_level_bytes=True,
        **_PARALLEL_FILES,
    ),
    PredefinedOptions.FLASH_SSD_OPTIMIZED: RocksDBTuning(**_PARALLEL_FILES),
}


def parse_predefined_options(value: Any) -> PredefinedOptions:
    """``state.backend.rocksdb.predefined-options``'s parser: a preset or its name, in any case."""
    if isinstance(value, PredefinedOptions):
        return value
    try:
        return PredefinedOptions[str(value).strip().upper()]
    except KeyError:
        raise ValueError("one of " + ", ".join(p.name for p in PredefinedOptions)) from None
