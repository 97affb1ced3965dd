"""A file of FileSource as a split, and its versioned codec. Performs no I/O."""

from __future__ import annotations

import msgspec

from barrierflow.connectors.base.struct_codec import StructCodec
from barrierflow.connectors.files.file_enumerator import FileEnumeratorState


class FileSplit(msgspec.Struct, frozen=True):
    """The file at ``path`` (its name, and its split's), read from ``offset``: its format's
    position (``file_reader.py``)."""

    path: str
    offset: int = 0

    @property
    def split_id(self) -> str:
        return self.path


FILE_SPLITS = StructCodec(FileSplit)
FILE_ENUMERATOR_STATES = StructCodec(FileEnumeratorState[FileSplit])
