"""The command-line arguments of the test jobs: paths, checked before anything is written.

A job run as ``barrierflow run job.py --help`` once took ``--help`` for its output directory and
wrote a checkpoint directory named ``--help/`` into the repository. An argument that starts
with a dash is an option that reached the wrong program, never a path.
"""

from __future__ import annotations

import sys


def job_arguments(usage: str, count: int) -> list[str]:
    """The job's ``count`` arguments; exits with ``usage`` if there are not exactly that many,
    or if one starts with ``-``."""
    args = sys.argv[1:]
    if len(args) != count:
        sys.exit(f"usage: {sys.argv[0]} {usage}")
    for arg in args:
        if arg.startswith("-"):
            sys.exit(
                f"{sys.argv[0]}: {arg!r} looks like an option, not a path; usage: "
                f"{sys.argv[0]} {usage} (a path that starts with '-' must be written ./{arg})"
            )
    return args
