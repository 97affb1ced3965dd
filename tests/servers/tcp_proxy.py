"""A TCP forwarder for test servers: clients connect to its fixed port, it forwards to a server
whose port may change. Closing it cuts every connection and refuses new ones, as a server that
went away does; opening it again on the same port lets a restarted server take over.

**Threading:** one accepting thread, and per connection two pumping threads and one that
closes it when both ended; all daemons.
"""

from __future__ import annotations

import contextlib
import socket
import threading


class TcpProxy:
    def __init__(self, port: int, target_port: int, host: str = "127.0.0.1") -> None:
        self.port = port
        self.target_port = target_port
        self._host = host
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self._connections: set[socket.socket] = set()

    def open(self, target_port: int | None = None) -> None:
        """Accepts on ``port`` again, forwarding to ``target_port`` (default: the last one)."""
        if target_port is not None:
            self.target_port = target_port
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self._host, self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def close(self) -> None:
        """Stops accepting and resets every open connection."""
        with self._lock:
            listener, self._listener = self._listener, None
            connections, self._connections = self._connections, set()
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed
            try:
                server = socket.create_connection((self._host, self.target_port), 5)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._listener is not listener:  # closed meanwhile
                    client.close()
                    server.close()
                    return
                self._connections |= {client, server}
            pumps = [threading.Thread(target=_pump, args=p, daemon=True)
                     for p in ((client, server), (server, client))]  # fmt: skip
            for pump in pumps:
                pump.start()
            closer = threading.Thread(target=self._close_after, args=(pumps, client, server))
            closer.daemon = True
            closer.start()

    def _close_after(self, pumps: list[threading.Thread], *conns: socket.socket) -> None:
        for pump in pumps:
            pump.join()
        with self._lock:
            self._connections.difference_update(conns)
        for conn in conns:
            conn.close()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            sink.sendall(data)
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)
