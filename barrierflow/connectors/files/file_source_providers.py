"""PyFlink's ``FileEnumeratorProvider`` and ``FileSplitAssignerProvider``: how FileSource finds
its files and in which order it hands them out, for ``FileSourceBuilder.set_file_enumerator``
and ``set_split_assigner``. Performs no I/O.

barrierflow's FileSource does what Flink's defaults do with the formats it has: it lists the
paths recursively, leaves out hidden files (names starting with "." or "_"), makes one split
per file, and gives the next split to whichever reader asks.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class FileSplitting(enum.Enum):
    """WHOLE_FILES: a split per file. BLOCKS: Flink splits a file of a splittable format at
    its storage blocks; barrierflow reads every file as one split (the same records, with no
    parallelism inside a file)."""

    WHOLE_FILES = "whole-files"
    BLOCKS = "blocks"


@dataclass(frozen=True)
class FileEnumeratorProvider:
    splitting: FileSplitting

    @staticmethod
    def default_splittable_file_enumerator() -> FileEnumeratorProvider:
        """Flink's enumerator of splittable formats. Flink splits no file of a text line format
        either (it is not splittable); a bulk format's file is read whole here (logged)."""
        return FileEnumeratorProvider(FileSplitting.BLOCKS)

    @staticmethod
    def default_non_splittable_file_enumerator() -> FileEnumeratorProvider:
        """A split per file: FileSource's own enumeration."""
        return FileEnumeratorProvider(FileSplitting.WHOLE_FILES)


@dataclass(frozen=True)
class FileSplitAssignerProvider:
    """Flink's locality-aware assigner: a reader gets a split stored on its host first. Files
    read through pyarrow's file systems have no host, and Flink's assigner then hands out the
    splits in order to the readers that ask, as barrierflow's enumerator does."""

    @staticmethod
    def locality_aware_split_assigner() -> FileSplitAssignerProvider:
        return FileSplitAssignerProvider()
