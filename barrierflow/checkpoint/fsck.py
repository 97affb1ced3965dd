"""What ``barrierflow checkpoints fsck`` decides: given what a scan of a job's checkpoint
directory (or of one checkpoint or savepoint) found, which snapshots are healthy, which files
are damaged and what depends on them, and which files no snapshot references.

For each retained checkpoint or savepoint it checks that its metadata decodes (magic, version,
checksum), that every file it references exists with the recorded size and checksum, that an
SST file ends as a complete RocksDB table does, and that the checkpoints naming a shared file
agree on it (its size, checksum and the checkpoint that uploaded it, which no checkpoint
before that one may name). A shared file's reference count is the number of retained
checkpoints naming it: none makes it an orphan, as is any other file nothing references.
An orphan may be deleted only when it is older than the newest retained snapshot (a newer one
may belong to a checkpoint in progress).

Performs no I/O: ``fsck_scan.py`` gathers the facts.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from barrierflow.checkpoint import storage_layout as layout
from barrierflow.checkpoint.history import HISTORY_FILE
from barrierflow.checkpoint.metadata import (
    CheckpointMetadata,
    FileHandle,
    IncrementalKeyedHandle,
    KeyGroupsHandle,
)

SST_MAGIC = 0x88E241B785F4CFF7  # RocksDB's block-based table: the last 8 bytes, little endian
# Files of a job's directory that no snapshot references and that are not orphans.
JOB_FILES = frozenset(
    {HISTORY_FILE, layout.JOBMASTER_ADDRESS_FILE, layout.EXCEPTIONS_FILE, layout.RESTORED_FROM_FILE}
)


class Problem(enum.Enum):
    METADATA_UNREADABLE = "metadata unreadable"
    MISSING = "missing"
    SIZE_MISMATCH = "size mismatch"
    CHECKSUM_MISMATCH = "checksum mismatch"
    INCOMPLETE_SST = "incomplete SST file"
    REFERENCES_DISAGREE = "references disagree"


@dataclass(frozen=True)
class FileFacts:
    """A file the scan found: ``checksum`` and ``sst_complete`` when it was read (a
    referenced file), else None."""

    path: str  # relative to the root
    size: int
    mtime_ms: int
    checksum: str | None = None
    sst_complete: bool | None = None


@dataclass(frozen=True)
class SnapshotFacts:
    """A retained checkpoint or savepoint: its metadata, or why it could not be read."""

    name: str  # "checkpoint 5", "savepoint 3"
    metadata_path: str  # relative to the root
    metadata: CheckpointMetadata | None
    error: str = ""


@dataclass(frozen=True)
class Reference:
    """One file a snapshot names, and who in it needs the file."""

    handle: FileHandle
    snapshot: str
    owner: str  # "operator 'count' subtask 1, keyed state"
    uploaded_by: int | None = None  # a shared file's uploading checkpoint


@dataclass(frozen=True)
class Finding:
    problem: Problem
    path: str
    detail: str
    dependents: tuple[str, ...]  # "checkpoint 5: operator 'count' subtask 1, keyed state"

    def describe(self) -> str:
        needed = "; ".join(self.dependents) or "nothing"
        return f"{self.path}: {self.problem.value} ({self.detail}); needed by {needed}"


@dataclass(frozen=True)
class Orphan:
    path: str
    size: int
    deletable: bool  # older than the newest retained snapshot


@dataclass(frozen=True)
class SnapshotVerdict:
    name: str
    checkpoint_id: int | None
    files: int  # files it references
    damaged: tuple[str, ...]  # paths of its damaged files (its metadata's, if unreadable)

    @property
    def healthy(self) -> bool:
        return not self.damaged


@dataclass(frozen=True)
class FsckReport:
    root: str
    snapshots: list[SnapshotVerdict]
    findings: list[Finding]
    orphans: list[Orphan]
    shared_references: dict[str, list[str]] = field(default_factory=dict)  # path -> snapshots

    @property
    def healthy(self) -> bool:
        """No damage (orphans waste space; they damage nothing)."""
        return not self.findings


def references(snapshot: str, metadata: CheckpointMetadata) -> Iterator[Reference]:
    """Every file ``metadata`` names."""
    for op in metadata.operators:
        for s in op.subtasks:
            owner = f"operator {op.uid!r} subtask {s.subtask}"
            for stream, what in ((s.operator_state, "operator state"),
                                 (s.channel_state, "data in flight")):  # fmt: skip
                if isinstance(stream, FileHandle):
                    yield Reference(stream, snapshot, f"{owner}, {what}")
            for handle in s.keyed_state:
                if isinstance(handle, KeyGroupsHandle):
                    if isinstance(handle.stream, FileHandle):
                        yield Reference(handle.stream, snapshot, f"{owner}, keyed state")
                    continue
                yield from _incremental(handle, snapshot, owner)


def _incremental(handle: IncrementalKeyedHandle, snapshot: str, owner: str) -> Iterator[Reference]:
    for shared in handle.shared:
        what = f"{owner}, RocksDB file {shared.local_name}"
        yield Reference(shared.file, snapshot, what, shared.checkpoint_id)
    for name, stream in handle.private.items():
        if isinstance(stream, FileHandle):
            yield Reference(stream, snapshot, f"{owner}, RocksDB file {name}")


def judge(
    root: str,
    snapshots: list[SnapshotFacts],
    files: dict[str, FileFacts],
    orphan_scope: str = "",
) -> FsckReport:
    """The report on ``snapshots`` and the ``files`` found under ``root`` (by relative path).
    ``orphan_scope``: only files under this relative directory can be orphans (one checkpoint
    of a job: the shared files of the others are not its to judge); "" for all."""
    refs: dict[str, list[Reference]] = {}
    for facts in snapshots:
        if facts.metadata is not None:
            for ref in references(facts.name, facts.metadata):
                refs.setdefault(ref.handle.path, []).append(ref)
    findings = [
        Finding(Problem.METADATA_UNREADABLE, f.metadata_path, f.error, (f.name,))
        for f in snapshots
        if f.metadata is None
    ]
    for path, found in sorted(refs.items()):
        findings += _check_file(path, found, files.get(path), _checkpoint_ids(snapshots))
    damaged: dict[str, set[str]] = {}
    for finding in findings:
        for dependent in finding.dependents:
            damaged.setdefault(dependent.split(":", 1)[0], set()).add(finding.path)
    verdicts = [
        SnapshotVerdict(
            f.name,
            f.metadata.checkpoint_id if f.metadata else None,
            len({r.handle.path for r in references(f.name, f.metadata)}) if f.metadata else 0,
            tuple(sorted(damaged.get(f.name, ()))),
        )
        for f in snapshots
    ]
    shared = {
        path: sorted({r.snapshot for r in found})
        for path, found in refs.items()
        if any(r.uploaded_by is not None for r in found)
    }
    orphans = _orphans(snapshots, files, refs, orphan_scope)
    return FsckReport(root, verdicts, findings, orphans, shared)


def _checkpoint_ids(snapshots: list[SnapshotFacts]) -> dict[str, int]:
    return {f.name: f.metadata.checkpoint_id for f in snapshots if f.metadata is not None}


def _check_file(
    path: str, refs: list[Reference], facts: FileFacts | None, ids: dict[str, int]
) -> list[Finding]:
    dependents = tuple(sorted({f"{r.snapshot}: {r.owner}" for r in refs}))
    recorded = refs[0].handle
    if facts is None:
        return [Finding(Problem.MISSING, path, "no such file", dependents)]
    found = []
    disagreeing = _disagreements(path, refs, ids)
    if disagreeing:
        found.append(Finding(Problem.REFERENCES_DISAGREE, path, disagreeing, dependents))
    if facts.size != recorded.size:
        detail = f"{facts.size} bytes, recorded {recorded.size}"
        found.append(Finding(Problem.SIZE_MISMATCH, path, detail, dependents))
    elif facts.checksum is not None and facts.checksum != recorded.checksum:
        detail = "its bytes changed since it was written"
        found.append(Finding(Problem.CHECKSUM_MISMATCH, path, detail, dependents))
    elif path.endswith(".sst") and facts.sst_complete is False:
        # as recorded, yet no complete table: it was uploaded before RocksDB finished it
        detail = "it does not end with RocksDB's table footer"
        found.append(Finding(Problem.INCOMPLETE_SST, path, detail, dependents))
    return found


def _disagreements(path: str, refs: list[Reference], ids: dict[str, int]) -> str:
    """How the snapshots that name ``path`` disagree about it; "" if they do not."""
    seen = {(r.handle.size, r.handle.checksum) for r in refs}
    if len(seen) > 1:
        return f"{len(seen)} different sizes or checksums recorded"
    uploaders = {r.uploaded_by for r in refs if r.uploaded_by is not None}
    if len(uploaders) > 1:
        return f"recorded as uploaded by checkpoints {sorted(uploaders)}"
    named = layout.parse_shared_state_file(path)
    for uploader in uploaders:
        if named is not None and named != uploader:
            return f"its name says checkpoint {named} uploaded it, the metadata {uploader}"
        early = sorted(r.snapshot for r in refs if ids.get(r.snapshot, uploader) < uploader)
        if early:
            return f"named by {', '.join(early)}, before checkpoint {uploader} uploaded it"
    return ""


def _orphans(
    snapshots: list[SnapshotFacts],
    files: dict[str, FileFacts],
    refs: dict[str, list[Reference]],
    scope: str,
) -> list[Orphan]:
    kept = {f.metadata_path for f in snapshots} | JOB_FILES | set(refs)
    completions = [f.metadata.completion_timestamp_ms for f in snapshots if f.metadata]
    newest = max(completions, default=None)
    prefix = f"{scope.rstrip('/')}/" if scope else ""
    return [
        Orphan(path, facts.size, newest is not None and facts.mtime_ms < newest)
        for path, facts in sorted(files.items())
        if path not in kept and path.startswith(prefix)
    ]


def referenced_paths(snapshots: Iterable[SnapshotFacts]) -> set[str]:
    """The files to read (and sum) of ``snapshots``."""
    return {
        ref.handle.path
        for f in snapshots
        if f.metadata is not None
        for ref in references(f.name, f.metadata)
    }
