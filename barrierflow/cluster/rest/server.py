"""RestServer: the HTTP server of the REST API, web UI and metrics, on the driver.

The standard library's ``ThreadingHTTPServer`` (docs/adr/0010-rest-api-and-metrics.md says why
no web framework): a daemon thread accepts, one daemon thread per request calls
``RestApi.handle``. The port: a configured port is taken or the server fails; the default port
(``rest.port`` not set) is the first free one of ``DEFAULT_PORT``..``DEFAULT_PORT_RANGE_END``,
as Flink's port ranges, so that several jobs on one driver machine each get one; 0 is any free
port.

**Threading:** ``start`` and ``close`` from the JobMaster's thread; requests on their own
threads. **I/O:** one listening TCP socket.
"""

from __future__ import annotations

import errno
import ipaddress
import logging
import socket
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from barrierflow.cluster.rest.rest_api import RestApi

log = logging.getLogger("barrierflow.rest")

DEFAULT_PORT = 8081
DEFAULT_PORT_RANGE_END = 8181
MAX_BODY_BYTES = 1 << 20
IDLE_CONNECTION_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class RestConfig:
    """``rest.address`` and ``rest.port``; ``port_is_default``: ``rest.port`` was not set, so
    another free port of the default range will do."""

    address: str = "localhost"
    port: int = DEFAULT_PORT  # 0: any free port; -1: no server
    port_is_default: bool = True

    @property
    def enabled(self) -> bool:
        return self.port >= 0

    def candidate_ports(self) -> range:
        if self.port_is_default and self.port == DEFAULT_PORT:
            return range(DEFAULT_PORT, DEFAULT_PORT_RANGE_END + 1)
        return range(self.port, self.port + 1)


class RestServerError(Exception):
    """The REST server could not listen; the message says where and what to do."""


def is_loopback(address: str) -> bool:
    """Whether ``address`` (a name or an IP) is reachable from this machine only."""
    try:
        infos = socket.getaddrinfo(address, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(i[4][0]).is_loopback for i in infos)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    timeout = IDLE_CONNECTION_TIMEOUT_S  # a kept-alive connection left idle is closed

    def _serve(self) -> None:
        if self.server.closing:  # a kept-alive connection that outlived the server
            self.close_connection = True
            self.send_error(503, "the job ended; its REST server is closed")
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self.send_error(413, "request body too large")
            return
        body = self.rfile.read(length) if length else b""
        try:
            response = self.server.api.handle(self.command, self.path, self.headers, body)
        except Exception:  # a bug answers 500, the server goes on
            log.exception("REST request %s %s failed", self.command, self.path)
            self.send_error(500, "internal error; see the driver's log")
            return
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(response.body)))
        for name, value in response.headers:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.body)

    do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = _serve

    def log_message(self, format: str, *args: object) -> None:
        log.debug("%s %s", self.address_string(), format % args)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], api: RestApi) -> None:
        self.api = api
        self.closing = False
        super().__init__(address, _Handler)


class RestServer:
    def __init__(self, api: RestApi, config: RestConfig) -> None:
        self._server = _bind(api, config)
        host, port = self._server.server_address[:2]
        shown = config.address if config.address not in ("0.0.0.0", "::", "") else None
        self.port = port
        self.url = f"http://{shown or socket.gethostname()}:{port}"
        if config.port_is_default and port != config.port and config.port > 0:
            log.info("Port %d was taken; the REST server took %d", config.port, port)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.2},
            name=f"rest server {host!s}:{port}",  # an IP address: a str
            daemon=True,
        )

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        """Stops accepting and closes the socket; requests in progress end on their own."""
        self._server.closing = True
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()


def _bind(api: RestApi, config: RestConfig) -> _Server:
    ports = config.candidate_ports()
    last: OSError | None = None
    for port in ports:
        try:
            return _Server((config.address, port), api)
        except OSError as e:
            if e.errno != errno.EADDRINUSE:
                raise RestServerError(
                    f"the REST server cannot listen on {config.address}:{port}: {e}. Check "
                    "rest.address (a name or address of this machine), or set rest.port: -1 "
                    "to run without the REST API and web UI"
                ) from e
            last = e
    if len(ports) == 1:
        raise RestServerError(
            f"the REST server cannot listen on {config.address}:{ports[0]}: the port is taken "
            f"({last}), probably by another job or program on this machine. Set rest.port to "
            "another port, to 0 for any free port, or leave it unset to take the first free "
            f"one of {DEFAULT_PORT}-{DEFAULT_PORT_RANGE_END}"
        ) from last
    raise RestServerError(
        f"the REST server found no free port on {config.address} among "
        f"{ports.start}-{ports.stop - 1}: set rest.port to a free port, or to 0 for any"
    ) from last
