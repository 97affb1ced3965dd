"""Partition directories, add-action paths, partition values and delta-rs storage options."""

from __future__ import annotations

import datetime

from barrierflow.checkpoint.file_systems import S3Settings
from barrierflow.connectors.delta.delta_paths import (
    partition_dir,
    partition_value,
    storage_options,
    table_uri,
)


def test_partition_directories_are_hive_escaped_and_nulls_get_the_default_partition():
    assert partition_dir({"day": "2024-01-02", "k": "a/b=c"}) == "day=2024-01-02/k=a%2Fb%3Dc"
    assert partition_dir({"k": None}) == "k=__HIVE_DEFAULT_PARTITION__"
    assert partition_dir({}) == ""


def test_partition_values_are_delta_s_text():
    assert partition_value(True) == "true"
    assert partition_value(datetime.date(2024, 1, 2)) == "2024-01-02"
    assert partition_value(7) == "7"
    assert partition_value(None) is None


def test_a_local_table_path_is_absolute_and_s3a_is_s3(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert table_uri("t") == f"{tmp_path}/t"
    assert table_uri("s3a://bucket/t") == "s3://bucket/t"


def test_storage_options_carry_the_job_s_s3_settings_under_the_sink_s_own():
    s3 = S3Settings("http://127.0.0.1:9000", "key", "secret", path_style_access=True)
    options = storage_options("s3://b/t", s3, {"AWS_REGION": "eu-west-1"})
    assert options == {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
        "AWS_ALLOW_HTTP": "true",
        "AWS_REGION": "eu-west-1",
        "AWS_ACCESS_KEY_ID": "key",
        "AWS_SECRET_ACCESS_KEY": "secret",
        "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false",
    }
    assert storage_options("/tmp/t", s3, None) == {}
