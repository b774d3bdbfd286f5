"""Loading the Cypher files shipped in ``cam_engine.cypher`` by name.

Queries take values only as ``$parameters``; each file declares them in a
``// params:`` comment, which a unit test checks against the ones it uses.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

from cam_engine.errors import StoreError

_NAME = re.compile(r"[a-z][a-z0-9_]*")
PARAMETER = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
# Names Neo4j cannot take as parameters everywhere (index names in procedure calls are
# fine, but we also build them from the embedder's dimension) are checked with this.
IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,62}")


@cache
def load_query(name: str) -> str:
    if not _NAME.fullmatch(name):
        raise StoreError(f"invalid query name {name!r}")
    try:
        return resources.files("cam_engine.cypher").joinpath(f"{name}.cypher").read_text()
    except FileNotFoundError as exc:
        raise StoreError(f"no Cypher file {name}.cypher in the package") from exc


# Clauses that write (or need an auto-commit transaction). Our Cypher files write them
# in capitals; comments are dropped first, so prose in a comment never counts.
_WRITE_CLAUSE = re.compile(r"\b(CREATE|MERGE|SET|DELETE|REMOVE|DROP|FOREACH|IN TRANSACTIONS)\b")


@cache
def is_read_only(name: str) -> bool:
    """Whether a query only reads: such queries run as retried read transactions."""
    code = "\n".join(
        line for line in load_query(name).splitlines() if not line.lstrip().startswith("//")
    )
    return _WRITE_CLAUSE.search(code) is None


def statements(name: str) -> list[str]:
    """The statements of a multi-statement file (split on ';'), comments dropped."""
    body = "\n".join(
        line for line in load_query(name).splitlines() if not line.lstrip().startswith("//")
    )
    return [s.strip() for s in body.split(";") if s.strip()]


def declared_parameters(text: str) -> set[str]:
    match = re.search(r"^// params:(.*)$", text, re.MULTILINE)
    return set(PARAMETER.findall(match.group(1))) if match else set()


def used_parameters(text: str) -> set[str]:
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
    return set(PARAMETER.findall(code))


def check_identifier(value: str, what: str) -> str:
    if not IDENTIFIER.fullmatch(value):
        raise StoreError(f"invalid {what} {value!r}: use letters, digits and '_'")
    return value
