"""What an Iceberg sink's writers prepare at a barrier: the data files they wrote, for the global
committer to append in one snapshot; and its versioned codec. Performs no I/O."""

from __future__ import annotations

import msgspec

from barrierflow.connectors.base.struct_codec import StructCodec


class IcebergCommittable(msgspec.Struct, frozen=True):
    """``files``: their paths; ``job_id`` and ``sink_uid``: the job and sink the snapshot
    records, by which a replayed commit is found committed."""

    job_id: str
    sink_uid: str
    files: list[str]


ICEBERG_COMMITTABLES = StructCodec(IcebergCommittable)
