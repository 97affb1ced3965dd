"""Which bucket, a directory under a FileSink's base path, a part file goes to, as PyFlink's
``BucketAssigner`` says: the base path itself, or the processing time formatted by a Java
date-time pattern (Flink's ``DateTimeBucketAssigner``: ``yyyy-MM-dd--HH`` unless the program
gives another, in the machine's time zone unless it names one).

barrierflow's FileSink writes into the base path unless a program asks for buckets; Flink's
defaults to hourly buckets. A program that reads its output back by the base path therefore
finds it in both only where it names its assigner. Performs no I/O.
"""

from __future__ import annotations

import datetime
import re
import zoneinfo
from dataclasses import dataclass

# Java DateTimeFormatter letters a bucket pattern may use, and their strftime equivalents.
_LETTERS = {"yyyy": "%Y", "yy": "%y", "MM": "%m", "dd": "%d", "HH": "%H", "mm": "%M", "ss": "%S"}
_TOKEN = re.compile(r"'([^']*)'|([A-Za-z])\2*|(.)", re.DOTALL)


def strftime_pattern(java_pattern: str) -> str:
    """``java_pattern`` (``yyyy-MM-dd--HH``) as a ``strftime`` format; ValueError naming a
    letter it does not know."""
    out = []
    for match in _TOKEN.finditer(java_pattern):
        quoted, letters, other = match.group(1), match.group(0), match.group(3)
        if quoted is not None:
            out.append(quoted.replace("%", "%%") if quoted else "'")  # '' is a quote
        elif other is not None:
            out.append("%%" if other == "%" else other)
        elif letters in _LETTERS:
            out.append(_LETTERS[letters])
        else:
            raise ValueError(
                f"date_time_bucket_assigner(): pattern {java_pattern!r} uses {letters!r}; "
                f"the letters known here are {', '.join(_LETTERS)} (quote literal text: 'T')"
            )
    return "".join(out)


@dataclass(frozen=True)
class BucketAssigner:
    """``pattern``: a strftime format, or None for the base path itself."""

    pattern: str | None = None
    timezone_id: str | None = None

    @staticmethod
    def base_path_bucket_assigner() -> BucketAssigner:
        return BucketAssigner()

    @staticmethod
    def date_time_bucket_assigner(
        format_str: str = "yyyy-MM-dd--HH", timezone_id: str | None = None
    ) -> BucketAssigner:
        if not isinstance(format_str, str) or not format_str:
            raise ValueError(f"date_time_bucket_assigner() needs a pattern, got {format_str!r}")
        if timezone_id is not None:
            try:
                zoneinfo.ZoneInfo(timezone_id)
            except (zoneinfo.ZoneInfoNotFoundError, ValueError, TypeError):
                raise ValueError(
                    f"date_time_bucket_assigner(): unknown time zone {timezone_id!r} "
                    "(an IANA name such as 'UTC' or 'Europe/Berlin')"
                ) from None
        return BucketAssigner(strftime_pattern(format_str), timezone_id)

    def bucket_id(self, now_s: float) -> str:
        """The bucket of a record written at ``now_s`` (epoch seconds): a relative directory,
        empty for the base path."""
        if self.pattern is None:
            return ""
        zone = zoneinfo.ZoneInfo(self.timezone_id) if self.timezone_id else None
        when = datetime.datetime.fromtimestamp(now_s, zone)
        return when.strftime(self.pattern).strip("/")
