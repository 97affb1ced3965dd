"""Internal: the data network between subtasks: credit-based channels over zmq, input gates
with channel blocking, result partitions and their partitioners. No public names
(docs/public-api.md)."""
