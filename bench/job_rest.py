"""A running job's REST API as the scaling benches read it: its address from the checkpoint
directory (``_jobmaster.json``) and its rescale history (``GET /jobs/:id/rescales``), which the
JobMaster keeps after the REST server stopped."""

from __future__ import annotations

import contextlib
import glob
import json
import time
import urllib.request
from pathlib import Path

import msgspec


def job_address(checkpoint_dir: str, timeout_s: float = 180) -> tuple[str, str, str]:
    """(job id, REST URL, secret) of the one job writing under ``checkpoint_dir``."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = glob.glob(f"{checkpoint_dir}/*/_jobmaster.json")
        if found:
            with contextlib.suppress(ValueError, OSError):
                address = json.loads(Path(found[0]).read_text())
                return Path(found[0]).parent.name, address["rest_url"], address["secret"]
        if time.monotonic() > deadline:
            raise TimeoutError(f"no job wrote its address under {checkpoint_dir}")
        time.sleep(0.2)


def rescale_history(url: str, job_id: str) -> list[dict]:
    """The job's rescale history, oldest first (REST ``GET /jobs/:id/rescales``)."""
    with urllib.request.urlopen(f"{url}/jobs/{job_id}/rescales", timeout=10) as answer:
        return sorted(json.loads(answer.read())["rescales"], key=lambda r: r["id"])


def rescale_history_after(client, url: str, job_id: str) -> list[dict]:
    """The history from the JobMaster once the job ended (its REST server has stopped)."""
    with contextlib.suppress(OSError):
        return rescale_history(url, job_id)
    return [msgspec.to_builtins(r) for r in client._job_master.status_view.snapshot().rescales]
