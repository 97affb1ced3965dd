"""SharedStateRegistry: which files under ``<job>/shared/`` incremental checkpoints still need.

An incremental RocksDB checkpoint uploads only the SST files that are new since the last
checkpoint its task was notified complete, and references the older ones. A shared file may be
deleted once no retained completed checkpoint references it and no pending checkpoint can still
reference it. As Flink since FLINK-24611, each file records the last checkpoint that used it;
the reference count (retained completed checkpoints referencing the file) is what decides here,
because it stays right whatever order the store subsumes checkpoints in.

**Threading:** the JobMaster's thread only (not thread-safe). **Lifecycle:** one per JobMaster,
kept across the job's attempts; a JobMaster that takes a job over (``--resume``) rebuilds it
from the retained checkpoints' metadata (``SharedStateRegistry.rebuild``). Performs no I/O:
every event returns the keys to delete now, and the caller deletes those files.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

SharedStateKey = str  # a shared file's path relative to the job directory, e.g. "shared/ab12.sst"


class EntryStatus(enum.Enum):
    REFERENCED = "referenced"  # by at least one retained completed checkpoint
    HELD = "held"  # unreferenced, kept until the checkpoints it waits for have ended


@dataclass(frozen=True, slots=True)
class SharedStateEntry:
    """What the registry knows about one shared file that has not been deleted."""

    key: SharedStateKey
    reference_count: int  # retained completed checkpoints that reference the file
    last_used: int  # the newest completed checkpoint that referenced it
    waiting_for: frozenset[int]  # pending checkpoints that may still reference it (when held)

    @property
    def status(self) -> EntryStatus:
        return EntryStatus.REFERENCED if self.reference_count > 0 else EntryStatus.HELD


class SharedStateRegistry:
    """The coordinator's bookkeeping of shared files; it decides, the caller deletes.

    Call order, from the coordinator (each call returning keys deletes those files); a
    completion asks through ``checkpoint_completion.py`` (``stale_references``, ``retain``)::

        trigger N                   checkpoint_triggered(N)
        every task acknowledged N   missing = validate_references(N, keys N reused)
                                    missing: decline N, then unregister_aborted(N, keys - missing)
                                    else write chk-N/_metadata, then
                                      delete register_checkpoint(N, every shared key of N)
                                      delete subsume(ids the CompletedCheckpointStore dropped)
        N aborted (declined, timed out, metadata write failed, subsumed by a newer one,
        tasks restarted)            delete unregister_aborted(N, shared keys acknowledged so far)
        late ack of an aborted N    delete unregister_aborted(N, that ack's shared keys)
        JobMaster restarted         registry = SharedStateRegistry.rebuild(retained checkpoints)

    Why pending checkpoints hold deletions: a task reuses the files of the last checkpoint it
    was notified complete, so a checkpoint pending when a file became unreferenced may still
    reference it. Such a file is *held* until every checkpoint that was pending at that moment
    has ended; if one of them completes referencing it, the file is referenced again (rescued).
    A checkpoint triggered later can only reference it through a stale notification, and
    ``validate_references`` reports that, so the checkpoint is declined instead of completed.

    Assumes every upload has a key of its own (e.g. a UUID in the file name): a key registered
    by one checkpoint is never uploaded again by another.
    """

    def __init__(self) -> None:
        self._retained: dict[int, frozenset[SharedStateKey]] = {}
        self._pending: set[int] = set()
        self._reference_count: dict[SharedStateKey, int] = {}  # every registered key
        self._last_used: dict[SharedStateKey, int] = {}  # every registered key
        self._held: dict[SharedStateKey, set[int]] = {}  # key -> pending ids it waits for
        self._held_by: dict[int, set[SharedStateKey]] = {}  # pending id -> keys waiting for it

    @classmethod
    def rebuild(
        cls, completed_checkpoints: Iterable[tuple[int, Iterable[SharedStateKey]]]
    ) -> SharedStateRegistry:
        """A registry for the retained completed checkpoints, after the JobMaster restarted.

        Nothing is pending then: the tasks restart too, so no checkpoint of the old attempt
        can complete. Files the old registry held, and uploads of checkpoints pending at the
        crash, are unknown to the new one; the coordinator sweeps them (files under
        ``shared/`` that no registered checkpoint references).
        """
        registry = cls()
        for checkpoint_id, keys in sorted(completed_checkpoints, key=lambda c: c[0]):
            if checkpoint_id in registry._retained:
                raise ValueError(
                    f"checkpoint {checkpoint_id} appears twice among the retained checkpoints; "
                    "pass each retained checkpoint's metadata once"
                )
            registry._reference(checkpoint_id, frozenset(keys))
        return registry

    # --- events ---------------------------------------------------------------------------------

    def checkpoint_triggered(self, checkpoint_id: int) -> None:
        """Records that ``checkpoint_id`` is pending; call before sending its barriers."""
        if checkpoint_id in self._pending or checkpoint_id in self._retained:
            raise ValueError(
                f"checkpoint {checkpoint_id} was already triggered; checkpoint ids must be unique"
            )
        self._pending.add(checkpoint_id)

    def validate_references(
        self, checkpoint_id: int, reused_keys: Iterable[SharedStateKey]
    ) -> frozenset[SharedStateKey]:
        """The reused keys that pending ``checkpoint_id`` must not reference: decline it if any.

        A key is missing when it was deleted (or never registered), or when it is held for
        checkpoints pending before ``checkpoint_id`` was triggered: a task notified late
        reused a file of a checkpoint already subsumed, and the file may go before this
        checkpoint completes. An empty answer stays true until ``checkpoint_id`` ends, because
        a pending checkpoint holds every file it could see referenced.
        """
        self._require_pending(checkpoint_id, "validate_references")
        return frozenset(
            key
            for key in reused_keys
            if key not in self._last_used
            or (key in self._held and checkpoint_id not in self._held[key])
        )

    def register_checkpoint(
        self, checkpoint_id: int, keys: Iterable[SharedStateKey]
    ) -> list[SharedStateKey]:
        """Checkpoint ``checkpoint_id`` completed referencing ``keys`` (new and reused).

        Call after its metadata is written and after ``validate_references`` found nothing
        missing; a key that is unknown here is taken for a new upload. Returns the held keys
        deleted now that this checkpoint, the last they waited for, ended without them.

        Steps: 1. reference every key (a held one is rescued); 2. end the pending checkpoint.
        """
        self._require_pending(checkpoint_id, "register_checkpoint")
        # 1. reference
        self._reference(checkpoint_id, frozenset(keys))
        # 2. end
        self._pending.discard(checkpoint_id)
        return self._release_held(checkpoint_id)

    def subsume(self, checkpoint_ids: Iterable[int]) -> list[SharedStateKey]:
        """The store dropped these completed checkpoints; returns the keys to delete now.

        A key no retained checkpoint references any more is deleted at once if nothing is
        pending, else held until every checkpoint pending now has ended.
        """
        checkpoint_ids = list(dict.fromkeys(checkpoint_ids))
        unknown = [c for c in checkpoint_ids if c not in self._retained]
        if unknown:
            raise ValueError(
                f"cannot subsume checkpoints {unknown}: they are not retained completed "
                "checkpoints of this registry (subsumed twice, or never registered)"
            )
        deleted: list[SharedStateKey] = []
        for checkpoint_id in checkpoint_ids:
            for key in self._retained.pop(checkpoint_id):
                self._reference_count[key] -= 1
                if self._reference_count[key] > 0:
                    continue
                if self._pending:
                    self._held[key] = set(self._pending)
                    for pending_id in self._pending:
                        self._held_by.setdefault(pending_id, set()).add(key)
                else:
                    self._forget(key)
                    deleted.append(key)
        return sorted(deleted)

    def unregister_aborted(
        self, checkpoint_id: int, keys: Iterable[SharedStateKey] = ()
    ) -> list[SharedStateKey]:
        """Checkpoint ``checkpoint_id`` was aborted; returns the keys to delete now.

        Its own uploads (the keys no completed checkpoint registered) go at once, even while
        other checkpoints are pending: tasks reuse only files of checkpoints they were notified
        complete, and this one never completes, so no other checkpoint can reference them.
        Reused keys stay. Files held only for this checkpoint go too. May be called again for
        late acknowledgements of the same checkpoint.

        A reused key whose file was already deleted (a stale reference) is unknown here and is
        returned again; pass ``keys`` without what ``validate_references`` reported missing.
        """
        if checkpoint_id in self._retained:
            raise ValueError(
                f"checkpoint {checkpoint_id} completed and cannot be aborted; "
                "drop it from the store and call subsume instead"
            )
        deleted = {key for key in keys if key not in self._last_used}
        if checkpoint_id in self._pending:
            self._pending.discard(checkpoint_id)
            deleted.update(self._release_held(checkpoint_id))
        return sorted(deleted)

    # --- queries --------------------------------------------------------------------------------

    def entry(self, key: SharedStateKey) -> SharedStateEntry | None:
        """What is known about ``key``; None once it was deleted (or if never registered)."""
        if key not in self._last_used:
            return None
        return SharedStateEntry(
            key,
            self._reference_count[key],
            self._last_used[key],
            frozenset(self._held.get(key, ())),
        )

    def known_keys(self) -> frozenset[SharedStateKey]:
        """Every key not yet deleted: referenced by a retained checkpoint or held for one."""
        return frozenset(self._last_used)

    def reference_count(self, key: SharedStateKey) -> int:
        """Retained completed checkpoints referencing ``key``; 0 when held, deleted or unknown."""
        return self._reference_count.get(key, 0)

    def last_used(self, key: SharedStateKey) -> int | None:
        return self._last_used.get(key)

    # --- internals ------------------------------------------------------------------------------

    def _reference(self, checkpoint_id: int, keys: frozenset[SharedStateKey]) -> None:
        self._retained[checkpoint_id] = keys
        for key in keys:
            self._reference_count[key] = self._reference_count.get(key, 0) + 1
            self._last_used[key] = max(self._last_used.get(key, checkpoint_id), checkpoint_id)
            for pending_id in self._held.pop(key, ()):
                self._held_by[pending_id].discard(key)

    def _release_held(self, ended_id: int) -> list[SharedStateKey]:
        deleted = []
        for key in self._held_by.pop(ended_id, ()):
            waiting_for = self._held[key]
            waiting_for.discard(ended_id)
            if not waiting_for:
                self._forget(key)
                deleted.append(key)
        return sorted(deleted)

    def _forget(self, key: SharedStateKey) -> None:
        del self._reference_count[key]
        del self._last_used[key]
        self._held.pop(key, None)

    def _require_pending(self, checkpoint_id: int, call: str) -> None:
        if checkpoint_id not in self._pending:
            raise ValueError(
                f"{call}({checkpoint_id}): checkpoint {checkpoint_id} is not pending here; "
                "call checkpoint_triggered when triggering it, and not after it ended"
            )
