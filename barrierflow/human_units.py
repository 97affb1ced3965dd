"""Figures as people read them in logs and command output. Performs no I/O."""

from __future__ import annotations


def human_bytes(n: float) -> str:
    """``1536`` -> ``"1.5 KiB"``; whole bytes below 1 KiB."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"  # not reached: GiB is the last unit


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``counted(1, "problem")`` -> ``"1 problem"``, ``counted(2, "problem")`` -> ``"2 problems"``;
    ``plural`` for nouns that do not take an s."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"
