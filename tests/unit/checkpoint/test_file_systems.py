"""From the s3.* keys (or the AWS environment variables) to a pyarrow S3 file system: what it
is built with, that the secret key is never shown, and the errors for a wrong endpoint, bucket or
credentials, checked against a real S3-protocol server (tests/servers/s3.py)."""

from __future__ import annotations

import logging
import pickle

import pytest

from barrierflow.api.configuration import Configuration
from barrierflow.checkpoint import file_systems
from barrierflow.checkpoint.file_systems import FileSystemSettings, S3Settings, settings_from
from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.errors import StorageConfigError

SECRET = "s3cr3t-do-not-print"


@pytest.fixture(autouse=True)
def _reset_file_systems():
    yield
    file_systems.initialize(FileSystemSettings())


def built_with(fs) -> dict:
    """The arguments pyarrow built ``fs`` with (what it pickles)."""
    _, (kwargs,) = fs.__reduce__()
    return kwargs


def test_the_s3_keys_become_settings_and_the_region_alias_is_read():
    conf = Configuration(
        {
            "s3.endpoint": "http://127.0.0.1:9000",
            "s3.access-key": "AKIATEST",
            "s3.secret-key": SECRET,
            "s3.path.style.access": "true",
            "s3.endpoint.region": "eu-west-1",
        }
    )
    assert settings_from(conf) == FileSystemSettings(
        S3Settings("http://127.0.0.1:9000", "AKIATEST", SECRET, True, "eu-west-1")
    )
    assert settings_from(Configuration()) == FileSystemSettings()


def test_an_endpoint_url_sets_scheme_host_and_path_style_addressing():
    path_style = S3Settings("http://127.0.0.1:9000", "AKIATEST", SECRET, True, "us-east-1")
    kwargs = built_with(file_systems.s3_filesystem(path_style))
    assert kwargs["scheme"] == "http"
    assert kwargs["endpoint_override"] == "127.0.0.1:9000"
    assert kwargs["force_virtual_addressing"] is False
    assert (kwargs["access_key"], kwargs["secret_key"]) == ("AKIATEST", SECRET)
    assert kwargs["region"] == "us-east-1"

    virtual = S3Settings("minio.example:9000", region="us-east-1")  # Flink's default style
    kwargs = built_with(file_systems.s3_filesystem(virtual))
    assert kwargs["scheme"] == "https"
    assert kwargs["endpoint_override"] == "minio.example:9000"
    assert kwargs["force_virtual_addressing"] is True
    assert not kwargs["access_key"]  # unset: the AWS credential chain


def test_the_secret_key_is_not_in_repr_nor_in_the_task_config_repr():
    settings = FileSystemSettings(S3Settings("http://h:1", "AKIATEST", SECRET))
    assert SECRET not in repr(settings)
    assert "AKIATEST" in repr(settings) and "<hidden>" in repr(settings)
    assert pickle.loads(pickle.dumps(settings)) == settings  # shipped to executors


@pytest.mark.parametrize(
    ("conf", "message"),
    [
        ({"s3.access-key": "AKIATEST"}, "s3.access-key is set but s3.secret-key is not"),
        ({"s3.secret-key": SECRET}, "s3.secret-key is set but s3.access-key is not"),
        ({"s3.endpoint": "ftp://host:21"}, "is not an endpoint URL"),
    ],
)
def test_incomplete_credentials_or_a_bad_endpoint_are_refused_naming_the_keys(conf, message):
    with pytest.raises(StorageConfigError, match=message) as e:
        settings_from(Configuration(conf))
    assert SECRET not in str(e.value)


def server_settings(s3, **changes) -> FileSystemSettings:
    return FileSystemSettings(
        S3Settings(
            **{
                "endpoint": s3.endpoint,
                "access_key": s3.access_key,
                "secret_key": s3.secret_key,
                "path_style_access": True,
                "region": s3.region,
                **changes,
            }
        )
    )


def test_storage_on_s3_is_writable_with_the_s3_keys(s3):
    bucket = s3.bucket()
    file_systems.initialize(settings_from(Configuration(s3.configuration())))
    CheckpointDirectory(f"s3://{bucket}/ckpt/job").check_writable()
    assert s3.keys(bucket) == []  # the probe is gone


def test_unset_keys_take_the_credentials_from_the_aws_environment_variables(s3, monkeypatch):
    bucket = s3.bucket()
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3.secret_key)
    file_systems.initialize(server_settings(s3, access_key=None, secret_key=None))
    storage = CheckpointDirectory(f"s3://{bucket}/job")
    storage.write_small_file("note", b"from the environment")
    assert s3.get(bucket, "job/note") == b"from the environment"

    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
    file_systems.initialize(FileSystemSettings())  # a new file system, new credentials
    file_systems.initialize(server_settings(s3, access_key=None, secret_key=None))
    with pytest.raises(StorageConfigError, match="AWS_ACCESS_KEY_ID"):
        CheckpointDirectory(f"s3://{bucket}/job").check_writable()


def test_a_missing_bucket_is_reported_naming_the_uri_and_the_bucket(s3):
    file_systems.initialize(server_settings(s3))
    with pytest.raises(StorageConfigError) as e:
        CheckpointDirectory("s3://no-such-bucket/ckpt/job").check_writable()
    message = str(e.value)
    assert "s3://no-such-bucket/ckpt/job" in message
    assert "bucket 'no-such-bucket' does not exist" in message


def test_wrong_credentials_are_reported_without_showing_the_secret(s3, caplog):
    bucket = s3.bucket()
    file_systems.initialize(server_settings(s3, secret_key=SECRET))
    with (
        caplog.at_level(logging.DEBUG, logger="barrierflow"),
        pytest.raises(StorageConfigError) as e,
    ):
        CheckpointDirectory(f"s3://{bucket}/job").check_writable()
    message = str(e.value)
    assert f"s3://{bucket}/job" in message
    assert "credentials were refused" in message and "s3.secret-key" in message
    assert SECRET not in message
    assert "S3 file system" in caplog.text  # the settings were logged, without the secret
    assert SECRET not in caplog.text


def test_an_unreachable_endpoint_is_reported_naming_it(s3):
    file_systems.initialize(server_settings(s3, endpoint="http://127.0.0.1:9"))
    with pytest.raises(StorageConfigError) as e:
        CheckpointDirectory("s3://bucket/job").check_writable()
    message = str(e.value)
    assert "s3://bucket/job" in message
    assert "cannot be reached" in message and "http://127.0.0.1:9" in message


def test_a_uri_without_a_bucket_is_refused():
    with pytest.raises(StorageConfigError, match="names no bucket"):
        file_systems.resolve("s3:///path")
