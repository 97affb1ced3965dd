"""One SparkSession for the whole test session (starting Spark takes seconds); the jobs of the
session recorded in a job registry of its own, not the user's."""

from __future__ import annotations

import os
import sys
import tempfile

import pytest


def pytest_configure(config) -> None:
    # Every job a test runs (in this process or in a driver it starts) records itself in the
    # job registry: the session's own, so that the user's `barrierflow list` never shows them.
    if "BARRIERFLOW_HOME" not in os.environ:
        os.environ["BARRIERFLOW_HOME"] = tempfile.mkdtemp(prefix="barrierflow-test-home-")


@pytest.fixture(scope="session")
def spark():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from barrierflow.cluster.spark.session import get_or_create_session

    session = get_or_create_session(4)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL server, started for the test session (see tests/servers/postgres.py)."""
    from tests.servers.postgres import postgres_server

    with postgres_server() as server:
        yield server


@pytest.fixture(scope="session")
def kafka():
    """A Kafka-protocol broker with transactions (see tests/servers/kafka.py)."""
    from tests.servers.kafka import kafka_broker

    with kafka_broker() as broker:
        yield broker


@pytest.fixture(scope="session")
def s3():
    """An S3-protocol server with authentication, started for the test session (see
    tests/servers/s3.py)."""
    from tests.servers.s3 import s3_server

    with s3_server() as server:
        yield server


@pytest.fixture
def reset_file_systems():
    """Puts this process's file system settings (the s3.* keys) back to none after a test."""
    yield
    from barrierflow.checkpoint import file_systems

    file_systems.initialize(file_systems.FileSystemSettings())
