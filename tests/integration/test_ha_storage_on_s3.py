"""Leader election on S3 (an S3-protocol server with authentication): the lease is created with a
conditional put (``If-None-Match: *``), so of two standbys that race for an epoch one wins; the
election, renewal and release work there as on a file system."""

from __future__ import annotations

import threading

import pytest

from barrierflow.checkpoint import file_systems
from barrierflow.checkpoint.storage_layout import epoch_file
from barrierflow.client.ha.ha_files import S3HaFiles, ha_files
from barrierflow.client.ha.leader_election import LeaderElection
from barrierflow.client.ha.lease import Holder
from barrierflow.client.ha.records import LeaseRecord, decode
from barrierflow.common import Configuration

pytest.importorskip("boto3")


@pytest.fixture
def files(s3, reset_file_systems):
    file_systems.initialize(file_systems.settings_from(Configuration(s3.configuration())))
    return ha_files(f"s3://{s3.bucket('ha')}/ha", "job")


def test_the_lease_is_created_once_on_s3(files):
    assert isinstance(files, S3HaFiles)
    won = []
    barrier = threading.Barrier(4)

    def race(i: int) -> None:
        barrier.wait()
        if files.create(epoch_file(1), f"{i}".encode()):
            won.append(i)

    threads = [threading.Thread(target=race, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1 and files.read(epoch_file(1)) == f"{won[0]}".encode()
    assert files.list("leader") == ["epoch-00000000000000000001.json"]
    assert files.read("nothing") is None


def test_election_renewal_and_release_on_s3(files):
    first = LeaderElection(files, 5.0, Holder("elsewhere", 1, 0, "a"))
    assert first.acquire() == 1
    assert first.renew_once()
    first.reserve_checkpoint_ids(101)
    first.release()
    second = LeaderElection(files, 5.0, Holder("elsewhere", 2, 0, "b"))
    assert second.acquire() == 2  # released: at once
    earlier = decode(files.read(epoch_file(1)), LeaseRecord, "epoch 1")
    assert (earlier.released, earlier.reserved_checkpoint_ids) == (True, 101)
