"""File systems by URI: the process-wide settings of object stores, as Flink's
``FileSystem.initialize(config)``, turned into pyarrow file systems.

A local path, ``file://``, ``s3://`` (also ``s3a://``) and any URI ``pyarrow.fs`` understands
(``gs://``, ``hdfs://``, ...) resolve to a file system and a path in it. S3 is configured by
Flink's keys (``s3.endpoint``, ``s3.access-key``, ``s3.secret-key``, ``s3.path.style.access``,
``s3.region``); keys left unset fall back to the AWS environment variables and the default
credential chain (profile, instance role) *of the process that opens the file*, as in Flink.

Every process that opens storage calls ``initialize`` with the job's settings before it does:
the driver when it plans a job, each command of the command line, and each executor slot
(the settings ride in ``TaskConfig.file_systems``) before its subtasks start. Object stores
have no atomic rename: ``is_object_store`` tells writers to publish whole objects instead
(docs/adr/0009-object-storage.md).

A test facility, never set by configuration: ``install_wrapper`` makes every file system this
process resolves from then on, and every executor of the jobs it plans, go through a wrapper
(``barrierflow.testing.storage_faults`` injects storage errors and stalls with it).

**Threading:** ``initialize`` and ``resolve`` from any thread; a lock guards the settings and
the cache of file systems (pyarrow's file systems are thread-safe). **I/O:** none to build a
file system, except a bucket's region looked up from AWS when neither ``s3.region``,
``AWS_REGION`` nor ``s3.endpoint`` says it.
"""

from __future__ import annotations

import logging
import os
import posixpath
import threading
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

import pyarrow.fs as pafs

from barrierflow.errors import StorageConfigError

log = logging.getLogger("barrierflow.storage")

S3_SCHEMES = ("s3", "s3a")
# File systems whose rename is atomic and whose directories are real.
_RENAMING_FILE_SYSTEMS = frozenset({"local", "hdfs"})


class OptionSource(Protocol):
    """What settings are read from: ``api.configuration.Configuration`` or anything with
    ``get(key)`` returning the option's value or its default."""

    def get(self, key: str) -> Any: ...


@dataclass(frozen=True)
class S3Settings:
    """Flink's ``s3.*`` keys. None: the AWS default (environment variables, profile, instance
    role; AWS's own endpoint; the bucket's region)."""

    endpoint: str | None = None  # http://host:port, https://host, or host[:port] (https)
    access_key: str | None = None
    secret_key: str | None = field(default=None, repr=False)
    path_style_access: bool = False
    region: str | None = None

    def __repr__(self) -> str:
        secret = "<hidden>" if self.secret_key else None
        return (
            f"S3Settings(endpoint={self.endpoint!r}, access_key={self.access_key!r}, "
            f"secret_key={secret!r}, path_style_access={self.path_style_access}, "
            f"region={self.region!r})"
        )

    def describe(self) -> str:
        """For messages: where the bucket is reached and whose credentials are used."""
        where = self.endpoint or "AWS"
        if self.access_key:
            who = f"access key {self.access_key} (s3.access-key)"
        else:
            who = "credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or the AWS profile"
        style = ", path-style" if self.path_style_access else ""
        return f"endpoint {where}{style}, {who}"


class FileSystemWrapper(Protocol):
    """Wraps each file system that ``resolve`` returns: a test facility that injects faults.
    It must pickle (it rides to the executors in the settings) and be cheap to call: it wraps
    every file system resolved. A wrapped file system tells its kind through its handler's
    type name (``is_object_store``)."""

    def wrap(self, fs: pafs.FileSystem) -> pafs.FileSystem: ...


@dataclass(frozen=True)
class FileSystemSettings:
    """The settings of every file system a job's processes open; small, frozen, picklable."""

    s3: S3Settings = S3Settings()
    wrapper: FileSystemWrapper | None = None  # a test facility: see ``install_wrapper``


def settings_from(options: OptionSource) -> FileSystemSettings:
    """The file system settings among ``options`` (Flink's keys)."""
    endpoint = options.get("s3.endpoint") or None
    access_key = options.get("s3.access-key") or None
    secret_key = options.get("s3.secret-key") or None
    if (access_key is None) != (secret_key is None):
        given, missing = ("s3.access-key", "s3.secret-key")[:: 1 if access_key else -1]
        raise StorageConfigError(
            f"{given} is set but {missing} is not: set both, or neither to use the AWS "
            "credential chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, profile, instance role)"
        )
    if endpoint is not None:
        _split_endpoint(endpoint)  # a bad one fails here, before anything runs
    return FileSystemSettings(
        S3Settings(
            endpoint=endpoint,
            access_key=access_key,
            secret_key=secret_key,
            path_style_access=bool(options.get("s3.path.style.access")),
            region=options.get("s3.region") or None,
        ),
        wrapper=_installed_wrapper,
    )


_lock = threading.Lock()
_settings = FileSystemSettings()
_cache: dict[tuple[S3Settings, str | None], pafs.S3FileSystem] = {}
# Not a configuration key: only a test that runs a job program installs one, so that no
# user setting can turn fault injection on.
_installed_wrapper: FileSystemWrapper | None = None


def install_wrapper(wrapper: FileSystemWrapper | None) -> None:
    """A test facility: from now on this process's settings (``settings_from``), and so the
    executors of every job it plans, wrap each file system with ``wrapper``; None removes it."""
    global _installed_wrapper, _settings
    with _lock:
        _installed_wrapper = wrapper
        _settings = FileSystemSettings(_settings.s3, wrapper)


def initialize(settings: FileSystemSettings) -> None:
    """Makes ``settings`` this process's, for every file system resolved from now on."""
    global _settings
    with _lock:
        if settings != _settings:
            _cache.clear()
        _settings = settings


def current_settings() -> FileSystemSettings:
    with _lock:
        return _settings


def resolve(uri: str) -> tuple[pafs.FileSystem, str]:
    """The file system and the path in it of ``uri``: a local path or a URI."""
    fs, path = _resolve(uri)
    wrapper = current_settings().wrapper
    return (fs if wrapper is None else wrapper.wrap(fs)), path


def _resolve(uri: str) -> tuple[pafs.FileSystem, str]:
    if "://" not in uri:
        return pafs.LocalFileSystem(), posixpath.abspath(uri)
    scheme = uri.split("://", 1)[0].lower()
    if scheme in S3_SCHEMES:
        bucket_and_key = uri.split("://", 1)[1].split("?", 1)[0].rstrip("/")
        bucket = bucket_and_key.split("/", 1)[0]
        if not bucket:
            raise StorageConfigError(f"{uri!r} names no bucket; write s3://bucket/path")
        return _s3_filesystem(bucket), bucket_and_key
    try:
        return pafs.FileSystem.from_uri(uri)
    except (ValueError, OSError) as e:
        raise StorageConfigError(
            f"storage {uri!r} cannot be used: {e}. Use a local path or a URI such as "
            "file:///path, s3://bucket/path, gs://bucket/path or hdfs://host/path"
        ) from e


def is_object_store(fs: pafs.FileSystem) -> bool:
    """True where a rename is a copy and a delete (S3, GCS, ...): whatever must appear whole
    is written as one object that appears when its upload completes (ADR 0009), and
    directories are prefixes, created by writing a file into them. A file system implemented
    in Python (``pafs.PyFileSystem``, a wrapper's) is of the kind its handler names."""
    return fs.type_name.removeprefix("py::") not in _RENAMING_FILE_SYSTEMS


def s3_filesystem(settings: S3Settings, region: str | None = None) -> pafs.S3FileSystem:
    """A pyarrow S3 file system for ``settings`` (``region`` when the settings have none)."""
    # Delayed open: an object smaller than one part is uploaded by a single PUT at close,
    # rather than a multipart upload of one part (three requests); ADR 0009.
    kwargs: dict[str, Any] = {"region": settings.region or region, "allow_delayed_open": True}
    if settings.endpoint is not None:
        scheme, host = _split_endpoint(settings.endpoint)
        # pyarrow addresses buckets by path when an endpoint is given, unless told otherwise;
        # Flink's default (s3.path.style.access false) is virtual-host addressing.
        kwargs.update(
            scheme=scheme,
            endpoint_override=host,
            force_virtual_addressing=not settings.path_style_access,
        )
    if settings.access_key is not None:
        kwargs.update(access_key=settings.access_key, secret_key=settings.secret_key)
    return pafs.S3FileSystem(**kwargs)


def _s3_filesystem(bucket: str) -> pafs.S3FileSystem:
    with _lock:
        settings = _settings.s3
    # Without a region anywhere, AWS is asked where the bucket is, once per bucket.
    per_bucket = (
        settings.region is None and settings.endpoint is None and not _region_from_environment()
    )
    key = (settings, bucket if per_bucket else None)
    with _lock:
        fs = _cache.get(key)
    if fs is None:
        fs = s3_filesystem(settings, _bucket_region(bucket) if per_bucket else None)
        log.debug("S3 file system for %s: %r", bucket, settings)
        with _lock:
            fs = _cache.setdefault(key, fs)
    return fs


def _region_from_environment() -> bool:
    return bool(os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION"))


def _bucket_region(bucket: str) -> str | None:
    """AWS's answer, or None (the SDK's default) when it cannot be had."""
    try:
        return pafs.resolve_s3_region(bucket)
    except (OSError, ValueError):
        return None


def _split_endpoint(endpoint: str) -> tuple[str, str]:
    """``http://host:port`` -> ("http", "host:port"); no scheme means https."""
    if "://" not in endpoint:
        return "https", endpoint.rstrip("/")
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise StorageConfigError(
            f"s3.endpoint {endpoint!r} is not an endpoint URL: write http://host:port or "
            "https://host (an S3-compatible server), or leave it unset for AWS"
        )
    return parts.scheme, parts.netloc


def explain(uri: str, error: BaseException) -> str:
    """What to check when ``uri`` could not be used: the likely cause of ``error``."""
    text = str(error)
    if uri.split("://", 1)[0].lower() not in S3_SCHEMES:
        return "check that the directory exists or can be created, and its permissions"
    s3 = current_settings().s3
    bucket = uri.split("://", 1)[1].split("/", 1)[0]
    if "NO_SUCH_BUCKET" in text or f"Bucket '{bucket}' not found" in text:
        return f"bucket {bucket!r} does not exist at {s3.describe()}: create it or fix the URI"
    if any(
        code in text
        for code in (
            "ACCESS_DENIED",
            "INVALID_ACCESS_KEY_ID",
            "SIGNATURE_DOES_NOT_MATCH",
            "Access Denied",
            "credentials",
        )
    ):
        return (
            f"the credentials were refused ({s3.describe()}): check s3.access-key and "
            "s3.secret-key (or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, the AWS profile) and "
            f"that they may read, write and delete in bucket {bucket!r}"
        )
    if "NETWORK_CONNECTION" in text or "curlCode" in text or "resolve host" in text:
        return (
            f"the S3 endpoint cannot be reached ({s3.describe()}): check s3.endpoint, that "
            "the server is up, and the network between this machine and it"
        )
    return f"check the bucket, the credentials and the endpoint ({s3.describe()})"
