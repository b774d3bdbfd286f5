"""Where and how ``cam mcp --http`` serves: its address, token, allowed Host and Origin
values, and its bounds (serve/http.py applies them). Apart from serve/http.py so that the
CLI reads the defaults without loading the SDK and uvicorn."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

REQUEST_TIMEOUT_SECONDS = 60.0  # nginx's client_header_timeout, Node's headersTimeout
KEEP_ALIVE_SECONDS = 5.0  # uvicorn's: an idle connection between requests
MAX_CONNECTIONS = 100
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


@dataclass(frozen=True)
class HttpSettings:
    """Where and how ``cam mcp --http`` serves (module docstring; serve/http.py)."""

    host: str
    port: int
    token: str | None = None
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    request_timeout: float = REQUEST_TIMEOUT_SECONDS
    max_connections: int = MAX_CONNECTIONS

    @property
    def hosts(self) -> list[str]:
        """The Host header values let in: the loopback names and the bind address at the
        server's port, then those given (a name without a port: at any port)."""
        own = [f"{name}:{self.port}" for name in (*LOOPBACK_NAMES, url_host(self.host))]
        given = [h if _has_port(h) else f"{h}:*" for h in self.allowed_hosts]
        bare = [h for h in self.allowed_hosts if not _has_port(h)]  # a client on port 80
        return _unique(own + given + bare)

    @property
    def origins(self) -> list[str]:
        """The Origin header values let in: http:// and https:// of each default host,
        then those given."""
        own = [
            f"{scheme}://{name}:{self.port}"
            for name in (*LOOPBACK_NAMES, url_host(self.host))
            for scheme in ("http", "https")
        ]
        return _unique(own + [o.rstrip("/") for o in self.allowed_origins])


def url_host(host: str) -> str:
    """``host`` as it appears in a URL or a Host header: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _has_port(host: str) -> bool:
    return host.rpartition("]")[2].count(":") == 1 if host.startswith("[") else ":" in host


def _unique(values: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(values))
