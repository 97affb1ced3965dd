"""Internal: the operator coordinators the JobMaster hosts for connectors; no public names
(docs/public-api.md).

Hosted by ``cluster/operator_coordinator_host.py``: a source's split enumerator
(``source_coordinator.py``), a sink's global committer (``global_committer_coordinator.py``),
and which one an operator's function gets (``creation.py``)."""
