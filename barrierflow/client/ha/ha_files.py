"""The files of one cluster id in the HA storage, and the one operation leader election needs
that checkpoint storage does not: a create that fails when the file exists.

- On a file system (``file://`` or a path; shared between hosts as NFS or a cluster file
  system is): the content is written to a temporary file, then hard-linked to its name;
  ``link`` fails when the name exists, and a reader never sees a file half written.
- On S3: a conditional put, ``If-None-Match: *`` (S3 has honored it since 2024, as do the
  S3-compatible servers that implement conditional writes). It needs ``boto3``
  (``pip install 'barrierflow[s3]'``): pyarrow's S3 client cannot send the condition.

Other storage (``gs://``, ``hdfs://``...) is refused when the configuration is checked: leader
election there would need an exclusive create this module does not have.

**I/O:** all of it. **Threading:** one instance per thread, or calls from one thread at a time.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import uuid
from typing import Protocol

from barrierflow.checkpoint import file_systems
from barrierflow.checkpoint.storage_layout import cluster_dir
from barrierflow.errors import ConfigurationError, StorageConfigError


class HaFiles(Protocol):
    """The files under ``<ha-dir>/<cluster-id>``, by names relative to it."""

    uri: str

    def create(self, name: str, data: bytes) -> bool:
        """Writes ``name`` whole unless it exists: True if this call wrote it."""

    def replace(self, name: str, data: bytes) -> None:
        """Writes ``name`` whole, over what it held; a reader sees the old or the new."""

    def read(self, name: str) -> bytes | None:
        """The file's bytes, or None when there is none."""

    def list(self, directory: str) -> list[str]:
        """The names of the files in ``directory`` (relative to the cluster's), unsorted."""

    def delete(self, name: str) -> None:
        """Removes ``name``, if it is there."""


def ha_files(ha_dir: str, cluster_id: str) -> HaFiles:
    """The files of ``cluster_id`` under ``ha_dir``; a ``ConfigurationError`` for storage that
    cannot do an exclusive create."""
    uri = cluster_dir(ha_dir, cluster_id)
    scheme = uri.split("://", 1)[0].lower() if "://" in uri else "file"
    if scheme == "file":
        return LocalHaFiles(uri)
    if scheme in file_systems.S3_SCHEMES:
        return S3HaFiles(uri)
    raise ConfigurationError(
        f"high-availability.storageDir {ha_dir!r}: leader election needs a file system "
        "(file:// or a path on a disk every driver host shares) or S3 (s3://), where a file can "
        f"be created only if it does not exist; {scheme}:// cannot"
    )


class LocalHaFiles:
    def __init__(self, uri: str) -> None:
        self.uri = uri
        self._root = uri.removeprefix("file://") if uri.startswith("file://") else uri
        self._root = os.path.abspath(self._root)

    def _path(self, name: str) -> str:
        return os.path.join(self._root, name)

    def _written(self, final: str, data: bytes) -> str:
        """A temporary file beside ``final`` holding ``data``, on disk."""
        os.makedirs(os.path.dirname(final), exist_ok=True)
        tmp = f"{final}.{uuid.uuid4().hex}.inprogress"
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        return tmp

    def create(self, name: str, data: bytes) -> bool:
        final = self._path(name)
        tmp = self._written(final, data)
        try:
            os.link(tmp, final)
            return True
        except FileExistsError:
            return False
        finally:
            os.unlink(tmp)

    def replace(self, name: str, data: bytes) -> None:
        final = self._path(name)
        os.replace(self._written(final, data), final)

    def read(self, name: str) -> bytes | None:
        try:
            with open(self._path(name), "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def list(self, directory: str) -> list[str]:
        try:
            return [n for n in os.listdir(self._path(directory)) if not n.endswith(".inprogress")]
        except FileNotFoundError:
            return []

    def delete(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._path(name))


class S3HaFiles:
    """Through boto3, with the job's ``s3.*`` settings (``checkpoint/file_systems.py``)."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        bucket_and_prefix = uri.split("://", 1)[1]
        self._bucket, _, self._prefix = bucket_and_prefix.partition("/")
        try:
            import boto3
            from botocore.config import Config
        except ImportError as e:
            raise ConfigurationError(
                f"high-availability.storageDir {uri!r} is on S3, where leader election writes "
                "its lease with a conditional put that needs boto3: pip install "
                "'barrierflow[s3]' (or use a shared file system)"
            ) from e
        s3 = file_systems.current_settings().s3
        self._client = boto3.client(
            "s3",
            endpoint_url=s3.endpoint,
            region_name=s3.region,
            aws_access_key_id=s3.access_key,
            aws_secret_access_key=s3.secret_key,
            config=Config(
                s3={"addressing_style": "path" if s3.path_style_access else "auto"},
                retries={"max_attempts": 3, "mode": "standard"},
            ),
        )
        self._errors = self._client.exceptions

    def _key(self, name: str) -> str:
        return posixpath.join(self._prefix, name) if self._prefix else name

    def create(self, name: str, data: bytes) -> bool:
        from botocore.exceptions import ClientError

        try:
            self._client.put_object(
                Bucket=self._bucket, Key=self._key(name), Body=data, IfNoneMatch="*"
            )
            return True
        except ClientError as e:
            code = e.response.get("Error", {}).get("Code", "")
            status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            # 412: it exists; 409: another conditional put of it is in flight (S3 says retry,
            # and the retry would find it exists)
            if code in ("PreconditionFailed", "ConditionalRequestConflict") or status in (
                409,
                412,
            ):
                return False
            if code == "NotImplemented":
                raise StorageConfigError(
                    f"the S3 server of {self.uri} does not implement conditional writes "
                    "(If-None-Match), which leader election needs: use AWS S3, a server that "
                    "implements them, or a shared file system"
                ) from e
            raise

    def replace(self, name: str, data: bytes) -> None:
        self._client.put_object(Bucket=self._bucket, Key=self._key(name), Body=data)

    def read(self, name: str) -> bytes | None:
        try:
            return self._client.get_object(Bucket=self._bucket, Key=self._key(name))["Body"].read()
        except self._errors.NoSuchKey:
            return None

    def list(self, directory: str) -> list[str]:
        prefix = self._key(directory).rstrip("/") + "/"
        names = []
        paginator = self._client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self._bucket, Prefix=prefix):
            names += [o["Key"][len(prefix) :] for o in page.get("Contents", [])]
        return [n for n in names if "/" not in n]

    def delete(self, name: str) -> None:
        self._client.delete_object(Bucket=self._bucket, Key=self._key(name))
