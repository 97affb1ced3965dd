"""What PostgresSink's writers prepare at a barrier: a prepared transaction; and its versioned
codec. Performs no I/O."""

from __future__ import annotations

from typing import Any

import msgspec

from barrierflow.connectors.base.struct_codec import StructCodec


class PostgresCommittable(msgspec.Struct, frozen=True):
    """The prepared transaction's global id (``gid``: ``client.transaction_id_prefix``, the
    subtask, the checkpoint and the attempt) and the server's id of it (``xid``; "" when not
    known), by which a committer that finds ``gid`` no longer prepared tells a committed
    transaction from one rolled back."""

    gid: str
    xid: str


class PostgresCommittableCodec(StructCodec[PostgresCommittable]):
    def from_dict_layout(self, fields: dict[str, Any]) -> PostgresCommittable:
        """Committables of the dict layout written before the server's id was kept have none."""
        return PostgresCommittable(fields["gid"], fields.get("xid", ""))


POSTGRES_COMMITTABLES = PostgresCommittableCodec(PostgresCommittable)
