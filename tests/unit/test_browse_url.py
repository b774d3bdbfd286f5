"""``cam browse``'s Browser URL and style line (no server needed: pure functions)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from cam_engine import Environment
from cam_engine.cli.browse import browser_url, style_sheet


def env(**variables: str) -> Environment:
    return Environment.from_env(variables)


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        (
            "bolt://127.0.0.1:7687",
            "http://127.0.0.1:7474/browser/?preselectAuthMethod=NO_AUTH&dbms=bolt://127.0.0.1:7687",
        ),
        (  # no port: the driver's default, 7687
            "neo4j://localhost",
            "http://localhost:7474/browser/?preselectAuthMethod=NO_AUTH&dbms=neo4j://localhost:7687",
        ),
        (  # another Bolt port: Browser still on the HTTP port of the same host
            "bolt://db.example.com:17687",
            "http://db.example.com:7474/browser/"
            "?preselectAuthMethod=NO_AUTH&dbms=bolt://db.example.com:17687",
        ),
        (  # '+' escaped: Browser's URLSearchParams would read a bare one as a space
            "bolt+s://db.example.com:7687",
            "http://db.example.com:7474/browser/"
            "?preselectAuthMethod=NO_AUTH&dbms=bolt%2Bs://db.example.com:7687",
        ),
        (
            "NEO4J+SSC://db.example.com",
            "http://db.example.com:7474/browser/"
            "?preselectAuthMethod=NO_AUTH&dbms=neo4j%2Bssc://db.example.com:7687",
        ),
        (
            "bolt://[::1]:7688",
            "http://[::1]:7474/browser/?preselectAuthMethod=NO_AUTH&dbms=bolt://[::1]:7688",
        ),
    ],
)
def test_url_without_credentials_preselects_no_authentication(uri: str, expected: str) -> None:
    assert browser_url(uri, env()) == expected


def test_a_password_leaves_the_method_alone_and_fills_in_the_user() -> None:
    with_password = env(CAM_NEO4J_PASSWORD="secret", CAM_NEO4J_USER="alice")
    url = browser_url("neo4j://db.example.com:7687", with_password)
    assert url == "http://db.example.com:7474/browser/?dbms=neo4j://alice@db.example.com:7687"
    assert "secret" not in url
    default_user = browser_url("bolt://h:7687", env(CAM_NEO4J_PASSWORD="secret"))
    assert default_user == "http://h:7474/browser/?dbms=bolt://neo4j@h:7687"


def test_the_database_is_chosen_too() -> None:
    url = browser_url("bolt://h:7687", env(CAM_NEO4J_DATABASE="books"))
    assert parse_qs(urlsplit(url).query) == {
        "preselectAuthMethod": ["NO_AUTH"],
        "dbms": ["bolt://h:7687"],
        "db": ["books"],
    }


def test_the_override_moves_browser_and_keeps_the_connection_filled_in() -> None:
    moved = env(CAM_NEO4J_BROWSER_URL="https://graphs.example.com/browser/")
    assert browser_url("bolt+s://db.example.com", moved) == (
        "https://graphs.example.com/browser/"
        "?preselectAuthMethod=NO_AUTH&dbms=bolt%2Bs://db.example.com:7687"
    )
    other_port = env(CAM_NEO4J_BROWSER_URL="http://127.0.0.1:17474/browser/")
    assert browser_url("bolt://127.0.0.1:17687", other_port) == (
        "http://127.0.0.1:17474/browser/?preselectAuthMethod=NO_AUTH&dbms=bolt://127.0.0.1:17687"
    )
    # An override with a query of its own is the whole URL.
    whole = "http://127.0.0.1:7474/browser/?dbms=bolt://elsewhere:7687"
    assert browser_url("bolt://127.0.0.1:7687", env(CAM_NEO4J_BROWSER_URL=whole)) == whole


def test_the_style_line_is_the_whole_sheet_on_one_line() -> None:
    line, path = style_sheet()
    assert path is not None and path.name == "style.grass"
    assert line.startswith(":style node {") and "\n" not in line
    assert line.removeprefix(":style ").split() == path.read_text(encoding="utf-8").split()
    assert "node.Chunk {" in line and "relationship.SUMMARIZES {" in line
