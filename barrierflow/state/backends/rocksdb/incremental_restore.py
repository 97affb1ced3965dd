"""Reading an incremental RocksDB checkpoint: its files downloaded (or linked from a local copy)
into a directory that opens as a database, and its rows read back as key-group sections.

**Threading:** the task thread. **I/O:** the local directory; downloads through the
``RestoreStreams``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator

from rocksdict import AccessType, Options, Rdict, ReadOptions

from barrierflow.checkpoint.key_group_format import Section
from barrierflow.checkpoint.metadata import IncrementalKeyedHandle, StreamHandle
from barrierflow.protocol.key_group_range import KeyGroupRange
from barrierflow.state.backend import RestoreStreams
from barrierflow.state.backends.rocksdb.key_codec import Cursor, column_family, sections_of_rows
from barrierflow.state.descriptors import StateKind


def incremental_sections(
    handle: IncrementalKeyedHandle,
    streams: RestoreStreams,
    key_group_range: KeyGroupRange,
    scratch_dir: str,
) -> Iterator[tuple[int, Section]]:
    """The key-group format's sections of ``handle``'s key groups in ``key_group_range``, read
    from its database opened in ``scratch_dir``: how an incremental checkpoint restores into
    the ``hashmap`` backend."""
    with opened_handle(handle, streams, scratch_dir, key_group_range) as cursors:
        yield from sections_of_rows(cursors)


@contextlib.contextmanager
def opened_handle(
    handle: IncrementalKeyedHandle,
    streams: RestoreStreams,
    scratch_dir: str,
    key_group_range: KeyGroupRange,
) -> Iterator[list[Cursor]]:
    """Downloads ``handle`` into ``scratch_dir`` and opens it read-only; yields one cursor of
    the rows in ``key_group_range`` per state. Closes and deletes it all afterwards."""
    shutil.rmtree(scratch_dir, ignore_errors=True)
    options = Options(raw_mode=True)
    db = None
    families: list[tuple[str, StateKind, Rdict]] = []
    bounds: list[ReadOptions] = []  # outlive their iterators (see RocksDBMapState._rows)
    try:
        fetch_files(handle, streams, scratch_dir, None)
        db = Rdict(
            scratch_dir,
            options,
            column_families={cf: options for cf in column_families_of(scratch_dir, handle)},
            access_type=AccessType.read_only(),
        )
        low = key_group_range.start.to_bytes(2, "big")
        high = (key_group_range.end + 1).to_bytes(2, "big")
        cursors = []
        for name, kind_value in handle.states.items():
            kind = StateKind(kind_value)
            family = db.get_column_family(column_family(name, kind))
            families.append((name, kind, family))
            bound = ReadOptions()
            bound.fill_cache(False)  # type: ignore[call-arg]  # rocksdict's stub lacks the argument
            bound.set_iterate_upper_bound(high)
            bounds.append(bound)
            cursors.append((name, kind, family.items(from_key=low, read_opt=bound)))
        yield cursors  # type: ignore[misc]  # rocksdict's stub: keys of any kind; ours are bytes
        cursors.clear()
    finally:
        for _, _, family in families:
            family.close()
        if db is not None:
            db.close()
        shutil.rmtree(scratch_dir, ignore_errors=True)


def fetch_files(
    handle: IncrementalKeyedHandle, streams: RestoreStreams, directory: str, local_copy: str | None
) -> None:
    """Puts ``handle``'s files into ``directory``: hard links to the SST files of the local copy
    (immutable) and copies of its other files (RocksDB appends to the MANIFEST), or downloads."""
    os.makedirs(directory)
    files: list[tuple[str, StreamHandle]] = [(s.local_name, s.file) for s in handle.shared]
    files += list(handle.private.items())
    for name, stream in files:
        if os.path.basename(name) != name or name.startswith("."):
            raise ValueError(
                f"checkpoint {handle.checkpoint_id} names a state file {name!r}, which is not a "
                "plain file name; the metadata was not written by barrierflow"
            )
        target = os.path.join(directory, name)
        if local_copy is None:
            streams.download(stream, target)
        elif name.endswith(".sst"):
            os.link(os.path.join(local_copy, name), target)
        else:
            shutil.copyfile(os.path.join(local_copy, name), target)


def column_families_of(db_path: str, handle: IncrementalKeyedHandle) -> list[str]:
    """The column families of the database at ``db_path``, which must be those of ``handle``."""
    found = sorted(cf for cf in Rdict.list_cf(db_path, Options(raw_mode=True)) if cf != "default")
    expected = sorted(column_family(n, StateKind(k)) for n, k in handle.states.items())
    if found != expected:
        raise ValueError(
            f"the files of checkpoint {handle.checkpoint_id} hold column families {found}, its "
            f"metadata lists {expected}"
        )
    return found
