"""A real PostgreSQL server for tests: ``initdb`` and ``pg_ctl`` into a temporary directory.

With ``BARRIERFLOW_TEST_POSTGRES`` set to a connection string, that server is used instead
(it must allow prepared transactions). The binaries are found on the PATH, through
``pg_config --bindir``, or in Debian's ``/usr/lib/postgresql/<version>/bin``. PostgreSQL
refuses to run as root: as root, the server runs as the ``postgres`` user (``runuser``).
A server the fixture started can be restarted (the fault campaign does), with
``pg_ctl restart -m immediate`` by default: a crash, with recovery from the WAL at start.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class ServerControl:
    """How the fixture runs its own server: binaries, data directory, the user it runs as."""

    bindir: str
    data: str
    log: str  # the server's log file: pg_ctl must be given it at every start
    run_as: tuple[str, ...]

    def pg_ctl(self, *args: str) -> None:
        subprocess.run(
            [*self.run_as, os.path.join(self.bindir, "pg_ctl"), "-D", self.data, *args],
            check=True, capture_output=True,
        )  # fmt: skip


@dataclass(frozen=True)
class PostgresServer:
    conninfo: str  # of the maintenance database "postgres"
    control: ServerControl | None = None  # None: a server the tests did not start

    def restart(self, mode: str = "immediate") -> None:
        """``pg_ctl restart -m mode`` (immediate: no checkpoint, open connections cut, prepared
        transactions kept); returns once the server accepts connections again."""
        if self.control is None:
            raise RuntimeError("only a server the tests started can be restarted")
        self.control.pg_ctl("-m", mode, "-l", self.control.log, "-w", "-t", "60", "restart")
        _wait_until_ready(self.conninfo)

    def database(self, name: str) -> str:
        """A new, empty database; its connection string."""
        import psycopg

        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            conn.execute(f'CREATE DATABASE "{name}"')
        return _with_dbname(self.conninfo, name)


def _with_dbname(conninfo: str, name: str) -> str:
    from psycopg.conninfo import make_conninfo

    return make_conninfo(conninfo, dbname=name)


def _bindir() -> str:
    if shutil.which("pg_ctl"):
        return os.path.dirname(shutil.which("pg_ctl"))
    with contextlib.suppress(OSError, subprocess.CalledProcessError):
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, check=True, text=True)
        if os.path.exists(os.path.join(out.stdout.strip(), "pg_ctl")):
            return out.stdout.strip()
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if not found:
        raise RuntimeError(
            "PostgreSQL's server binaries (initdb, pg_ctl) were not found on the PATH, through "
            "pg_config or in /usr/lib/postgresql/*/bin; install PostgreSQL, or set "
            "BARRIERFLOW_TEST_POSTGRES to the connection string of a server"
        )
    return os.path.dirname(found[-1])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def postgres_server(max_prepared_transactions: int = 64) -> Iterator[PostgresServer]:
    external = os.environ.get("BARRIERFLOW_TEST_POSTGRES")
    if external and max_prepared_transactions > 0:
        yield PostgresServer(external)
        return
    bindir = _bindir()
    as_root = os.geteuid() == 0
    run_as = ["runuser", "-u", "postgres", "--"] if as_root else []
    root = tempfile.mkdtemp(prefix="barrierflow-pg-")
    data = os.path.join(root, "data")
    if as_root:
        shutil.chown(root, "postgres")
    port = _free_port()
    subprocess.run(
        [*run_as, os.path.join(bindir, "initdb"), "-D", data, "-U", "postgres",
         "--auth=trust", "--no-sync", "-E", "UTF8"],
        check=True, capture_output=True,
    )  # fmt: skip
    options = (
        f"-c port={port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={root} "
        f"-c max_prepared_transactions={max_prepared_transactions} "
        "-c fsync=off -c max_connections=200"
    )
    control = ServerControl(bindir, data, os.path.join(root, "server.log"), tuple(run_as))
    control.pg_ctl("-o", options, "-l", control.log, "-w", "-t", "60", "start")
    try:
        conninfo = f"host=127.0.0.1 port={port} user=postgres dbname=postgres"
        _wait_until_ready(conninfo)
        yield PostgresServer(conninfo, control)
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):
            control.pg_ctl("-m", "immediate", "stop")
        shutil.rmtree(root, ignore_errors=True)


def _wait_until_ready(conninfo: str, timeout_s: float = 30) -> None:
    import psycopg

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            psycopg.connect(conninfo, connect_timeout=2).close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
