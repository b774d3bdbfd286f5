"""A scripted OpenAI-compatible server for tests, chat completions and embeddings, on
127.0.0.1 in a background thread.

Each POST to ``/v1/chat/completions`` takes the next item of the script:

* ``"text"`` or ``Reply(...)``: 200 with a chat.completion JSON (usage included);
* a callable ``(request_json) -> str``: a reply whose text depends on the request;
* ``Fault(status, body=..., retry_after=...)``: that HTTP status;
* ``Delay(seconds, then=...)``: wait (longer than the client's timeout), then answer;
* ``MALFORMED``: 200 with a body that is not JSON;
* ``EMPTY_CHOICES``: 200 with ``"choices": []``;
* ``DISCONNECT``: close the connection without answering.

With ``refuse_response_format=True`` the server is an endpoint without structured
outputs: a chat request that carries ``response_format`` is answered 400 (as vLLM and
others word it) without taking a script item; ``response_formats`` lists what each chat
request carried.

When the script runs out, ``default`` answers (a reply item, a callable, or any of the
above); without one the server answers 500 "script exhausted". Requests are recorded
(``requests``) and the most requests ever in flight at once is ``max_in_flight``::

    with ChatServer(["a summary"]) as server:
        chat = OpenAICompatibleChat(server.base_url, "test-model")

POSTs to ``/v1/embeddings`` take items of their own script (``embeddings``, ``add_embeddings``,
``embeddings_default``): ``Vectors(dim)`` answers every input with a deterministic vector
(the hashing embedder's, scaled, items shuffled so only their ``index`` gives the order),
``Json(data)`` answers any body, and ``Fault``, ``Delay``, ``MALFORMED`` and ``DISCONNECT``
work as for chat. Like OpenAI, the server refuses (400) an input that is not a list of
non-empty strings.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from cam_engine.embed.hashing import HashingEmbedder

logger = logging.getLogger(__name__)

PATH = "/v1/chat/completions"
EMBEDDINGS_PATH = "/v1/embeddings"
TextFunction = Callable[[dict[str, Any]], str]


@dataclass(frozen=True)
class Reply:
    """A 200 reply. ``text`` may be a function of the request JSON; token counts default
    to word counts; ``delay`` (seconds) lets tests overlap concurrent requests."""

    text: str | TextFunction
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    usage: bool = True
    delay: float = 0.0
    finish_reason: str = "stop"


@dataclass(frozen=True)
class Fault:
    """An error status, with an optional Retry-After header and body (JSON error if None)."""

    status: int
    body: str | None = None
    retry_after: str | float | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Delay:
    """Hold the request ``seconds`` (longer than the client timeout), then answer ``then``."""

    seconds: float
    then: ScriptItem = "too late"


@dataclass(frozen=True)
class Vectors:
    """A 200 embeddings reply: for each input the hashing embedder's ``dim``-wide vector of
    its text times ``scale`` (so the client must normalize), items in reverse order when
    ``shuffled`` (so only their ``index`` gives the order)."""

    dim: int = 64
    scale: float = 3.0
    shuffled: bool = True
    delay: float = 0.0


@dataclass(frozen=True)
class Json:
    """A reply of this JSON body and status, whatever the request."""

    data: Any
    status: int = 200


@dataclass(frozen=True)
class _Special:
    kind: str


MALFORMED = _Special("malformed")
EMPTY_CHOICES = _Special("empty_choices")
DISCONNECT = _Special("disconnect")

ScriptItem = str | TextFunction | Reply | Fault | Delay | Vectors | Json | _Special


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: Any  # the parsed JSON, or None when it was not JSON
    raw: bytes


class ChatServer:
    """Context manager: starts on enter (or ``start()``), stops on exit (or ``close()``)."""

    def __init__(
        self,
        script: Iterable[ScriptItem] = (),
        *,
        default: ScriptItem | None = None,
        embeddings: Iterable[ScriptItem] = (),
        embeddings_default: ScriptItem | None = None,
        refuse_response_format: bool = False,
    ):
        self.refuse_response_format = refuse_response_format
        self._script: deque[ScriptItem] = deque(script)
        self._default = default
        self._embeddings: deque[ScriptItem] = deque(embeddings)
        self._embeddings_default = embeddings_default
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._requests: list[RecordedRequest] = []
        self._in_flight = 0
        self._max_in_flight = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> ChatServer:
        handler = type("_BoundHandler", (_Handler,), {"chat_server": self})
        server = _QuietServer(("127.0.0.1", 0), handler)
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()  # wakes delayed handlers
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- what tests look at ------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("chat server is not running")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{PATH}"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def bodies(self) -> list[Any]:
        return [r.body for r in self.requests]

    @property
    def response_formats(self) -> list[Any]:
        """The ``response_format`` of each chat request, in order (None: plain)."""
        return [
            r.body.get("response_format") if isinstance(r.body, dict) else None
            for r in self.requests
            if r.path == PATH
        ]

    @property
    def embedding_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == EMBEDDINGS_PATH]

    @property
    def max_in_flight(self) -> int:
        with self._lock:
            return self._max_in_flight

    @property
    def remaining(self) -> int:
        """Script items not yet used."""
        with self._lock:
            return len(self._script)

    def add(self, *items: ScriptItem) -> None:
        with self._lock:
            self._script.extend(items)

    def add_embeddings(self, *items: ScriptItem) -> None:
        with self._lock:
            self._embeddings.extend(items)

    def set_embeddings_default(self, item: ScriptItem | None) -> None:
        with self._lock:
            self._embeddings_default = item

    # -- used by the handler -----------------------------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _begin(self, path: str) -> ScriptItem | None:
        with self._lock:
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
            if path == EMBEDDINGS_PATH:
                script, default = self._embeddings, self._embeddings_default
            else:
                script, default = self._script, self._default
            return script.popleft() if script else default

    def _end(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _wait(self, seconds: float) -> bool:
        """Sleep unless the server closes first; True if it is closing."""
        return self._closing.wait(seconds) if seconds > 0 else self._closing.is_set()


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True  # a delayed handler never holds up close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        logger.debug("chat server: error while answering %s", client_address, exc_info=True)


class _Handler(BaseHTTPRequestHandler):
    chat_server: ChatServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("chat server: " + format, *args)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        headers = {name.lower(): value for name, value in self.headers.items()}
        server = self.chat_server
        server._record(RecordedRequest("POST", self.path, headers, body, raw))
        if self.path not in (PATH, EMBEDDINGS_PATH):
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        if (
            server.refuse_response_format
            and self.path == PATH
            and isinstance(body, dict)
            and "response_format" in body
        ):
            message = "'response_format' of type 'json_schema' is not supported"
            self._send_json(400, {"error": {"message": message, "type": "invalid_request_error"}})
            return
        item = server._begin(self.path)
        try:
            self._answer(item, body if isinstance(body, dict) else {})
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout): nothing to answer
        finally:
            server._end()

    def _answer(self, item: ScriptItem | None, request: dict[str, Any]) -> None:
        server = self.chat_server
        if item is None:
            self._send_json(500, {"error": {"message": "chat server script exhausted"}})
        elif isinstance(item, Delay):
            if not server._wait(item.seconds):
                self._answer(item.then, request)
        elif isinstance(item, Fault):
            headers = dict(item.headers)
            if item.retry_after is not None:
                headers["Retry-After"] = str(item.retry_after)
            if item.body is None:
                error = {"message": f"scripted fault {item.status}", "type": "test_fault"}
                self._send_json(item.status, {"error": error}, headers)
            else:
                self._send(item.status, item.body.encode("utf-8"), "text/plain", headers)
        elif item is MALFORMED:
            self._send(200, b'{"id": "chatcmpl-broken", "choices": [', "application/json")
        elif item is EMPTY_CHOICES:
            self._send_json(200, _completion(request, None, Reply("")))
        elif item is DISCONNECT:
            self.close_connection = True
            self.connection.shutdown(2)
        elif isinstance(item, Vectors | Json) or self.path == EMBEDDINGS_PATH:
            self._answer_embeddings(item, request)
        elif isinstance(item, Reply):
            if item.delay and server._wait(item.delay):
                return
            text = item.text(request) if callable(item.text) else item.text
            self._send_json(200, _completion(request, text, item))
        elif callable(item):
            self._send_json(200, _completion(request, item(request), Reply("")))
        else:
            self._send_json(200, _completion(request, str(item), Reply(str(item))))

    def _answer_embeddings(self, item: ScriptItem, request: dict[str, Any]) -> None:
        if isinstance(item, Json):
            self._send_json(item.status, item.data)
            return
        if not isinstance(item, Vectors):
            self._send_json(500, {"error": {"message": f"not an embeddings reply: {item!r}"}})
            return
        inputs = request.get("input")
        if (
            not isinstance(inputs, list)
            or not inputs
            or not all(isinstance(t, str) and t for t in inputs)
        ):
            error = {"message": "'$.input' is invalid", "type": "invalid_request_error"}
            self._send_json(400, {"error": error})
            return
        if item.delay and self.chat_server._wait(item.delay):
            return
        vectors = HashingEmbedder(item.dim).embed(inputs) * item.scale
        data = [
            {"object": "embedding", "index": i, "embedding": [float(v) for v in vector]}
            for i, vector in enumerate(vectors)
        ]
        if item.shuffled:
            data.reverse()
        words = sum(len(t.split()) for t in inputs)
        self._send_json(
            200,
            {
                "object": "list",
                "data": data,
                "model": request.get("model", "unknown"),
                "usage": {"prompt_tokens": words, "total_tokens": words},
            },
        )

    def _send_json(
        self, status: int, data: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        self._send(status, json.dumps(data).encode("utf-8"), "application/json", headers)

    def _send(
        self,
        status: int,
        body: bytes,
        content_type: str,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()


def _completion(request: dict[str, Any], text: str | None, reply: Reply) -> dict[str, Any]:
    """A chat.completion object; ``text=None`` gives empty choices."""
    data: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "unknown"),
        "choices": [],
    }
    if text is not None:
        data["choices"] = [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": reply.finish_reason,
            }
        ]
    if reply.usage:
        messages = request.get("messages") or []
        words = sum(len(str(m.get("content", "")).split()) for m in messages if isinstance(m, dict))
        prompt = reply.prompt_tokens if reply.prompt_tokens is not None else words
        completion = (
            reply.completion_tokens
            if reply.completion_tokens is not None
            else len((text or "").split())
        )
        data["usage"] = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
    return data
