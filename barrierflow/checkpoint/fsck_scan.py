"""The I/O of ``barrierflow checkpoints fsck``: finds what a path holds (a checkpoint directory
of several jobs, one job's directory, one ``chk-N`` or one savepoint), lists its files, reads
each snapshot's metadata and every file they reference (in parallel, each once, summed as it
streams), then lets ``fsck.judge`` decide; and deletes the orphans it may.

**Threading:** the caller's, and a pool of readers it waits for. **I/O:** the storage, through
``pyarrow.fs`` (local disk, S3...).
"""

from __future__ import annotations

import contextlib
import posixpath
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pyarrow.fs as pafs

from barrierflow.checkpoint import storage_layout as layout
from barrierflow.checkpoint.fsck import (
    SST_MAGIC,
    FileFacts,
    FsckReport,
    SnapshotFacts,
    judge,
    referenced_paths,
)
from barrierflow.checkpoint.metadata import checksummer, decode_metadata
from barrierflow.checkpoint.storage import is_job_root, resolve_filesystem
from barrierflow.errors import CorruptCheckpointError

_CHUNK = 1 << 20


def fsck(uri: str, threads: int = 8) -> list[FsckReport]:
    """One report per job directory under ``uri`` (``uri`` itself when it is one), or the
    report of the one checkpoint or savepoint ``uri`` is."""
    uri = uri.rstrip("/")
    if uri.endswith("/" + layout.METADATA_FILE):
        uri = uri[: -len(layout.METADATA_FILE) - 1]
    fs, path = resolve_filesystem(uri)
    infos = fs.get_file_info(pafs.FileSelector(path))  # FileNotFoundError if there is none
    names = {i.base_name: i for i in infos}
    if layout.METADATA_FILE in names:
        return [_one_snapshot(fs, uri, path, threads)]
    if is_job_root(infos):
        return [_job(fs, uri, path, threads)]
    return [
        _job(fs, f"{uri}/{i.base_name}", i.path, threads)
        for i in sorted(infos, key=lambda i: i.base_name)
        if i.type == pafs.FileType.Directory
        and is_job_root(fs.get_file_info(pafs.FileSelector(i.path)))
    ]


def _job(fs: pafs.FileSystem, uri: str, root: str, threads: int) -> FsckReport:
    """Every retained checkpoint of a job: each ``chk-N`` that has its ``_metadata``."""
    files = _list(fs, root)
    directories = {layout.parse_checkpoint_dir(p.split("/", 1)[0]) for p in files}
    retained = sorted(
        cid for cid in directories if cid is not None and layout.metadata_path(cid) in files
    )
    snapshots = [
        _snapshot(fs, root, f"checkpoint {cid}", layout.metadata_path(cid)) for cid in retained
    ]
    return _report(fs, uri, root, snapshots, files, threads)


def _one_snapshot(fs: pafs.FileSystem, uri: str, directory: str, threads: int) -> FsckReport:
    """A savepoint's paths are relative to its directory; a checkpoint's to its job's, of whose
    files only those under its ``chk-N`` can be its orphans."""
    probe = _snapshot(fs, directory, "snapshot", layout.METADATA_FILE)
    name = posixpath.basename(directory)
    cid = layout.parse_checkpoint_dir(name)
    if cid is None or (probe.metadata is not None and probe.metadata.is_savepoint):
        return _report(fs, uri, directory, [probe], _list(fs, directory), threads)
    job = SnapshotFacts(probe.name, layout.metadata_path(cid), probe.metadata, probe.error)
    root = posixpath.dirname(directory)
    return _report(fs, uri.rsplit("/", 1)[0], root, [job], _list(fs, root), threads, name)


def _list(fs: pafs.FileSystem, root: str) -> dict[str, FileFacts]:
    """Every file under ``root``, by path relative to it."""
    prefix = root.rstrip("/") + "/"
    found = {}
    for info in fs.get_file_info(pafs.FileSelector(root, recursive=True)):
        if info.type != pafs.FileType.File:
            continue
        at = info.path.find(prefix)  # some file systems put a scheme or host first
        relative = info.path[at + len(prefix) :] if at >= 0 else info.base_name
        mtime = int(info.mtime.timestamp() * 1000) if info.mtime is not None else 0
        found[relative] = FileFacts(relative, info.size or 0, mtime)
    return found


def _snapshot(fs: pafs.FileSystem, root: str, name: str, metadata_path: str) -> SnapshotFacts:
    path = posixpath.join(root, metadata_path)
    try:
        with fs.open_input_stream(path) as f:
            metadata = decode_metadata(f.read(), path)
    except CorruptCheckpointError as e:
        return SnapshotFacts(name, metadata_path, None, e.reason)
    except OSError as e:
        return SnapshotFacts(name, metadata_path, None, f"unreadable: {e}")
    label = f"{'savepoint' if metadata.is_savepoint else 'checkpoint'} {metadata.checkpoint_id}"
    return SnapshotFacts(label if name == "snapshot" else name, metadata_path, metadata)


def _report(
    fs: pafs.FileSystem,
    uri: str,
    root: str,
    snapshots: list[SnapshotFacts],
    files: dict[str, FileFacts],
    threads: int,
    orphan_scope: str = "",
) -> FsckReport:
    wanted = sorted(p for p in referenced_paths(snapshots) if p in files)
    summed = _in_parallel(threads, lambda p: _read(fs, root, files[p]), wanted)
    files = {**files, **{facts.path: facts for facts in summed}}
    return judge(uri, snapshots, files, orphan_scope)


def _in_parallel(threads: int, read: Callable[[str], FileFacts], paths: list[str]):
    if threads <= 1 or len(paths) <= 1:
        return [read(p) for p in paths]
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="fsck") as pool:
        return list(pool.map(read, paths))


def _read(fs: pafs.FileSystem, root: str, facts: FileFacts) -> FileFacts:
    """``facts`` with the file's checksum and, for an SST file, whether its footer is there."""
    digest = checksummer()
    size = 0
    tail = b""
    try:
        with fs.open_input_stream(posixpath.join(root, facts.path)) as f:
            while chunk := f.read(_CHUNK):
                digest.update(chunk)
                size += len(chunk)
                tail = (tail + chunk)[-8:]
    except FileNotFoundError:
        return facts  # gone since the listing: its size tells
    complete = None
    if facts.path.endswith(".sst"):
        complete = len(tail) == 8 and int.from_bytes(tail, "little") == SST_MAGIC
    return FileFacts(facts.path, size, facts.mtime_ms, digest.hexdigest(), complete)


def delete_orphans(report: FsckReport) -> list[str]:
    """Deletes the orphans of ``report`` that may go (older than the newest retained
    snapshot); returns their paths."""
    fs, root = resolve_filesystem(report.root)
    deleted = []
    for orphan in report.orphans:
        if orphan.deletable:
            with contextlib.suppress(FileNotFoundError):
                fs.delete_file(posixpath.join(root, orphan.path))
            deleted.append(orphan.path)
    return deleted
