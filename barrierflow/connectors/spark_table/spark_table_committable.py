"""What a Spark table sink's writers prepare at a barrier: the file they staged, for the global
committer to move into the table; and its versioned codec. Performs no I/O."""

from __future__ import annotations

import msgspec

from barrierflow.connectors.base.struct_codec import StructCodec


class SparkTableCommittable(msgspec.Struct, frozen=True):
    """``staged``: the file's name in the staging directory of ``app`` (the job and the sink:
    ``table_commit.app_id``)."""

    app: str
    staged: str


SPARK_TABLE_COMMITTABLES = StructCodec(SparkTableCommittable)
