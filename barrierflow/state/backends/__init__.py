"""Internal: keyed state backends; a program chooses one in
``barrierflow.datastream.state_backend``.

Keyed state backends: the one an operator subtask gets (``create_keyed_state_backend``, by
its kind in ``registry.py``), and where subtasks keep local state on their machine."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile

from barrierflow.protocol.key_group_range import KeyGroupRange
from barrierflow.state.backend import KeyedStateBackend
from barrierflow.state.backends.registry import StateBackendConfig, backend_kind

__all__ = [
    "StateBackendConfig",
    "create_keyed_state_backend",
    "local_job_dir",
    "local_recovery_dir",
    "local_state_name",
    "local_subtask_dir",
    "remove_local_state",
]


def local_state_name(operator_uid: str, subtask: int) -> str:
    """What an operator subtask's local directories are named after."""
    return f"{operator_uid}-{subtask}"


def local_job_dir(config: StateBackendConfig, job_id: str) -> str:
    """Where the subtasks of ``job_id`` on this machine keep local state (those of one leader
    epoch, under high availability)."""
    name = f"{job_id}-e{config.leader_epoch}" if config.leader_epoch else job_id
    return os.path.join(config.local_root or tempfile.gettempdir(), "barrierflow", name)


def local_subtask_dir(config: StateBackendConfig, job_id: str, name: str, attempt: int) -> str:
    """Removes what earlier attempts of the same subtask left (a killed process cannot clean up
    after itself; the JobMaster made sure those attempts stopped) and names this attempt's."""
    job_dir = local_job_dir(config, job_id)
    with contextlib.suppress(FileNotFoundError):
        for entry in os.listdir(job_dir):
            base, _, old = entry.rpartition("-a")
            if base == name and old.isdigit() and int(old) < attempt:
                shutil.rmtree(os.path.join(job_dir, entry), ignore_errors=True)
    return os.path.join(job_dir, f"{name}-a{attempt}")


def local_recovery_dir(config: StateBackendConfig, job_id: str, name: str) -> str:
    """Where subtask ``name`` keeps the local copy of its last completed checkpoint: outside
    its attempt's directory, so that the next attempt on this machine finds it."""
    return os.path.join(local_job_dir(config, job_id), "local-recovery", name)


def remove_local_state(config: StateBackendConfig, job_id: str, names: list[str]) -> None:
    """The job ended for good (canceled, or failed with no restart left): removes what the
    subtasks ``names`` kept on this machine for a restart (local recovery copies, attempt
    directories), then the job's directory if no other subtask's state is left in it. Only
    the slot that ran them calls this, after they stopped; other slots of the machine may still
    be stopping, so nothing of theirs is touched."""
    job_dir = local_job_dir(config, job_id)
    for name in names:
        shutil.rmtree(local_recovery_dir(config, job_id, name), ignore_errors=True)
        with contextlib.suppress(FileNotFoundError):
            for entry in os.listdir(job_dir):
                if entry.rpartition("-a")[0] == name:
                    shutil.rmtree(os.path.join(job_dir, entry), ignore_errors=True)
    for empty in (os.path.join(job_dir, "local-recovery"), job_dir):
        with contextlib.suppress(OSError):  # not empty: another slot's, or gone already
            os.rmdir(empty)


def create_keyed_state_backend(
    config: StateBackendConfig,
    max_parallelism: int,
    key_group_range: KeyGroupRange,
    local_dir: str,
    recovery_dir: str | None = None,
) -> KeyedStateBackend:
    """``local_dir``: this subtask's own directory (``local_subtask_dir``), for a kind that
    keeps local state; ``recovery_dir``: its ``local_recovery_dir``, given when local recovery
    is on."""
    factory = backend_kind(config.kind).factory
    return factory(config, max_parallelism, key_group_range, local_dir, recovery_dir)
