"""An enrichment against the local HTTP service (``tests/servers/http_service.py``): the same
request made by an ``AsyncFunction`` and by a plain map, with a minimal HTTP/1.1 client on
asyncio streams (one connection per request, as the service closes them).

Shipped to Spark workers by value (cloudpickle), since ``tests`` is not installed there.
"""

from __future__ import annotations

import asyncio
import socket

import cloudpickle

from barrierflow.datastream import AsyncFunction, MapFunction


def _request(value: int) -> bytes:
    return f"GET /{value} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode()


def _body(response: bytes, value: int) -> int:
    head, _, body = response.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        raise ConnectionError(f"the service answered {head[:40]!r} for {value}")
    return int(body)


class AsyncEnrich(AsyncFunction):
    """value -> [(value, value squared by the service)]."""

    def __init__(self, port: int) -> None:
        self.port = port

    async def async_invoke(self, value):
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        try:
            writer.write(_request(value))
            await writer.drain()
            return [(value, _body(await reader.read(), value))]
        finally:
            writer.close()


class SyncEnrich(MapFunction):
    """The same call, made synchronously in a map: value -> (value, value squared)."""

    def __init__(self, port: int) -> None:
        self.port = port

    def map(self, value):
        with socket.create_connection(("127.0.0.1", self.port)) as conn:
            conn.sendall(_request(value))
            chunks = []
            while chunk := conn.recv(4096):
                chunks.append(chunk)
        return (value, _body(b"".join(chunks), value))


cloudpickle.register_pickle_by_value(__import__(__name__, fromlist=["_"]))
