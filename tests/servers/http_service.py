"""A local HTTP service with a fixed latency, for async I/O tests and benchmarks: ``GET /N``
answers, after ``latency_s``, with the body ``N * N`` (an "enrichment" a test can check).

It runs an asyncio server on a thread of the calling process, bound to 127.0.0.1 on a free
port, so that many requests wait at once, as a remote service's would. It counts the requests
it answered.

**Threading:** the server on its own thread; ``requests`` may be read from any thread.
**Lifecycle:** ``http_service()`` starts it and stops it when the ``with`` block ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass
class HttpService:
    port: int
    latency_s: float
    requests: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request_line = await reader.readline()
            while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                pass  # the headers
            path = request_line.split()[1].decode()
            await asyncio.sleep(self.latency_s)
            body = str(int(path.strip("/")) ** 2).encode()
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                % (len(body), body)
            )
            await writer.drain()
            with self._lock:
                self.requests += 1
        finally:
            writer.close()


@contextlib.contextmanager
def http_service(latency_s: float) -> Iterator[HttpService]:
    loop = asyncio.new_event_loop()
    started = threading.Event()
    holder: dict = {}

    async def serve() -> None:
        service = HttpService(0, latency_s)
        server = await asyncio.start_server(service.handle, "127.0.0.1", 0, backlog=1024)
        service.port = server.sockets[0].getsockname()[1]
        holder["service"], holder["server"] = service, server
        started.set()

    thread = threading.Thread(target=loop.run_forever, name="http service", daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(serve(), loop)
    if not started.wait(10):
        raise RuntimeError("the local HTTP service did not start within 10 s")
    try:
        yield holder["service"]
    finally:
        holder["server"].close()
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
