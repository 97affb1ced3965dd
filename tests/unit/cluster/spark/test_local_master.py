"""Which masters run their Python workers on this machine: for those, a session named by
``--master`` is told this interpreter, as the embedded one is (``python3`` from the PATH may not
see barrierflow, and the job then fails with "No module named 'barrierflow'" on every task)."""

from __future__ import annotations

import pytest

from barrierflow.cluster.spark.masters import is_local_master


@pytest.mark.parametrize("master", ["local", "local[2]", "local[*]", "local[4,3]"])
def test_local_masters_run_their_workers_here(master):
    assert is_local_master(master)


@pytest.mark.parametrize(
    "master", ["spark://host:7077", "yarn", "k8s://https://host:6443", "local-cluster[2,1,1024]"]
)
def test_cluster_masters_do_not(master):
    assert not is_local_master(master)
