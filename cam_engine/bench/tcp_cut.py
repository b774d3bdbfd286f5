"""A loopback TCP proxy whose connections a crash test can cut: the network failing
between ``cam ingest`` and its Neo4j server, at a point the test chooses.

``cam ingest --store bolt://127.0.0.1:PROXY_PORT`` talks to the server through it.
Two faults:

- ``drop()``: every open connection is closed at once. A request the client sends
  next never arrives; the server sees the connection go and rolls back the
  transaction it had open there.
- ``lose_next_reply()``: requests still reach the server, but the next reply on any
  connection is thrown away and that connection closed. Sent while a batch waits to
  commit, the COMMIT arrives and is applied, and the client never hears so: the
  commit's outcome is unknown to it (the hardest case for a resume).

Plain threads and sockets, a test tool: one thread per direction per connection.
"""

from __future__ import annotations

import logging
import socket
import threading
from contextlib import suppress

logger = logging.getLogger(__name__)

_BUFFER = 65536


class CuttableProxy:
    """Forwards ``127.0.0.1:port`` to ``target_host:target_port`` until told to cut."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._lose_replies = False
        self.replies_lost = 0  # connections closed by lose_next_reply
        self.dropped = 0  # connections closed by drop
        self._closed = False
        self._acceptor = threading.Thread(target=self._accept, name="proxy-accept", daemon=True)
        self._acceptor.start()

    def uri(self, scheme: str = "bolt") -> str:
        return f"{scheme}://127.0.0.1:{self.port}"

    def drop(self) -> None:
        """Close every open connection now (new ones are still accepted)."""
        with self._lock:
            pairs, self._pairs = self._pairs, []
            self.dropped += len(pairs)
        for pair in pairs:
            _close(*pair)

    def lose_next_reply(self) -> None:
        """From now on, the next reply on each connection is lost and it is closed."""
        with self._lock:
            self._lose_replies = True

    def close(self) -> None:
        self._closed = True
        with suppress(OSError):
            self._listener.close()
        self.drop()

    def __enter__(self) -> CuttableProxy:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # --- forwarding ------------------------------------------------------------------------
    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            try:
                server = socket.create_connection(self._target)
            except OSError as exc:
                logger.warning("proxy: cannot reach %s:%d: %s", *self._target, exc)
                client.close()
                continue
            with self._lock:
                self._pairs.append((client, server))
            for source, sink, replies in ((client, server, False), (server, client, True)):
                threading.Thread(
                    target=self._pump, args=(source, sink, replies, client, server), daemon=True
                ).start()

    def _pump(
        self,
        source: socket.socket,
        sink: socket.socket,
        replies: bool,
        client: socket.socket,
        server: socket.socket,
    ) -> None:
        """Copy ``source`` to ``sink`` until either side closes or a cut closes both."""
        while True:
            try:
                data = source.recv(_BUFFER)
            except OSError:
                data = b""
            if data and replies and self._lose_replies:
                with self._lock:
                    self.replies_lost += 1
                data = b""  # the reply is lost, the connection closed below
            if not data:
                break
            try:
                sink.sendall(data)
            except OSError:
                break
        with self._lock:
            if (client, server) in self._pairs:
                self._pairs.remove((client, server))
        _close(client, server)


def _close(*sockets: socket.socket) -> None:
    for sock in sockets:
        with suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        with suppress(OSError):
            sock.close()
