"""Where a Delta sink's files go: partition directories and values as Delta writes them, the
table URI, and delta-rs's storage options for the job's ``s3.*`` settings. Performs no I/O.
"""

from __future__ import annotations

import datetime
import posixpath
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from barrierflow.checkpoint.file_systems import S3Settings

# Hive's escaping of a partition directory's name, as Spark writes Delta tables.
_ESCAPED = frozenset("\"#%'*/:=?\\\x7f{[]}^")


def table_uri(path: str) -> str:
    """A local path made absolute (the driver's: executors run in other directories);
    ``s3a://`` as ``s3://``, which delta-rs knows."""
    if "://" not in path:
        return posixpath.abspath(path)
    scheme, rest = path.split("://", 1)
    return f"s3://{rest}" if scheme.lower() in ("s3", "s3a") else path


def partition_value(value: Any) -> str | None:
    """Delta's text of a partition value (None: null)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, datetime.date):
        return value.isoformat()
    return str(value)


def partition_dir(values: dict[str, str | None]) -> str:
    """``col=value/...``, Hive-escaped; a null is ``__HIVE_DEFAULT_PARTITION__``."""
    return "/".join(
        f"{_escape(k)}={'__HIVE_DEFAULT_PARTITION__' if v is None else _escape(v)}"
        for k, v in values.items()
    )


def _escape(text: str) -> str:
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED or ord(c) < 32 else c for c in text)


def storage_options(uri: str, s3: S3Settings, given: dict[str, str] | None) -> dict[str, str]:
    """delta-rs's options for ``uri``: on S3, the job's ``s3.*`` settings (the same as its
    checkpoints'), under what the sink was given (which wins)."""
    options: dict[str, str] = {}
    if uri.startswith("s3://"):
        if s3.endpoint is not None:
            endpoint = s3.endpoint if "://" in s3.endpoint else f"https://{s3.endpoint}"
            options["AWS_ENDPOINT_URL"] = endpoint
            options["AWS_ALLOW_HTTP"] = str(endpoint.startswith("http://")).lower()
            options["AWS_REGION"] = s3.region or "us-east-1"
        elif s3.region is not None:
            options["AWS_REGION"] = s3.region
        if s3.access_key is not None and s3.secret_key is not None:
            options["AWS_ACCESS_KEY_ID"] = s3.access_key
            options["AWS_SECRET_ACCESS_KEY"] = s3.secret_key
        options["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] = str(not s3.path_style_access).lower()
    return {**options, **(given or {})}
