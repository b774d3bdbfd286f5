"""OpenAICompatibleEmbedder against a real (scripted) HTTP server on 127.0.0.1, alone,
under a memory, and through the ``cam`` command."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import numpy as np
import pytest
from click.testing import CliRunner

from cam_engine import Environment, Memory, Settings
from cam_engine.cli.main import cli
from cam_engine.embed import Embedder, HashingEmbedder, embedding_device, load_embedder
from cam_engine.embed.caching import CachingEmbedder
from cam_engine.embed.openai_compat import OpenAICompatibleEmbedder
from cam_engine.errors import CamError, ConfigError, EmbeddingError
from tests.conftest import shared_file
from tests.support.chat_server import (
    DISCONNECT,
    EMBEDDINGS_PATH,
    MALFORMED,
    ChatServer,
    Delay,
    Fault,
    Json,
    Vectors,
)

MODEL = "test-embed"
DIM = 48
KEY = "sk-embed-SECRET-0123456789"
TIMEOUT = 0.2  # for tests that time out; the others allow a loaded machine more time
PATIENT = 5.0
TEXTS = [f"text number {i} about {word}" for i, word in enumerate("abcdefghij")]


class FakeSleep:
    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
def sleep() -> FakeSleep:
    return FakeSleep()


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as running:
        yield running


def make(server: ChatServer, sleep: FakeSleep, **options: Any) -> OpenAICompatibleEmbedder:
    options.setdefault("timeout", PATIENT)
    options.setdefault("max_retries", 3)
    return OpenAICompatibleEmbedder(server.base_url, MODEL, sleep=sleep, **options)


def expected(texts: list[str], dim: int = DIM) -> np.ndarray:
    """What the server's vectors are, normalized: the hashing embedder's."""
    return HashingEmbedder(dim).embed(texts)


def inputs(server: ChatServer) -> list[list[str]]:
    return [r.body["input"] for r in server.embedding_requests]


# -- vectors ---------------------------------------------------------------------------


def test_unit_rows_in_input_order_across_batches(server: ChatServer, sleep: FakeSleep) -> None:
    server.set_embeddings_default(Vectors(DIM, scale=3.0, shuffled=True))
    embedder = make(server, sleep, batch_size=4)
    vectors = embedder.embed(TEXTS)
    assert vectors.dtype == np.float32 and vectors.shape == (10, DIM)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    # The server sends each batch's items in reverse: only their index gives the order.
    np.testing.assert_allclose(vectors, expected(TEXTS), atol=1e-6)
    assert inputs(server) == [TEXTS[0:4], TEXTS[4:8], TEXTS[8:10]]
    assert server.embedding_requests[0].body == {"model": MODEL, "input": TEXTS[0:4]}
    assert "authorization" not in server.embedding_requests[0].headers
    assert embedder.dim == DIM and len(server.requests) == 3  # no probe: learned
    assert sleep.waits == []


def test_name_device_and_the_embedder_protocol(sleep: FakeSleep) -> None:
    embedder = OpenAICompatibleEmbedder("http://127.0.0.1:1/v1/", MODEL, KEY, sleep=sleep)
    typed: Embedder = embedder  # type-checks against the protocol (isinstance would probe)
    assert typed.name == f"openai:{MODEL}"
    assert embedding_device(embedder) == "api"
    assert embedder.endpoint == "http://127.0.0.1:1/v1/embeddings"
    assert embedder.batch_size == 128
    assert KEY not in repr(embedder)


def test_blank_texts_are_not_sent_and_get_zero_rows(server: ChatServer, sleep: FakeSleep) -> None:
    server.set_embeddings_default(Vectors(DIM))
    texts = ["a tall ship", "", "   ", "a star to steer her by"]
    vectors = make(server, sleep).embed(texts)
    assert inputs(server) == [["a tall ship", "a star to steer her by"]]
    assert not vectors[1].any() and not vectors[2].any()
    np.testing.assert_allclose(vectors[[0, 3]], expected([texts[0], texts[3]]), atol=1e-6)


def test_dimension_asked_first_costs_one_probe(server: ChatServer, sleep: FakeSleep) -> None:
    server.set_embeddings_default(Vectors(DIM))
    embedder = make(server, sleep)
    assert embedder.embed([]).shape == (0, DIM)  # the size of nothing needs the API
    assert embedder.dim == DIM
    assert embedder.embed(["", ""]).shape == (2, DIM)
    assert len(server.embedding_requests) == 1  # one probe, then known


def test_the_caching_embedder_wraps_it(
    server: ChatServer, sleep: FakeSleep, tmp_path: Path
) -> None:
    server.set_embeddings_default(Vectors(DIM))
    cache = CachingEmbedder(make(server, sleep), tmp_path / "vectors.npz")
    first = cache.embed(TEXTS[:3])
    again = cache.embed([TEXTS[2], TEXTS[0]])
    np.testing.assert_array_equal(again, first[[2, 0]])
    assert cache.computed == 3 and len(server.embedding_requests) == 1
    assert (cache.name, cache.dim, embedding_device(cache)) == (f"openai:{MODEL}", DIM, "api")
    cache.save()
    reread = CachingEmbedder(make(server, sleep), tmp_path / "vectors.npz")
    np.testing.assert_array_equal(reread.embed(TEXTS[:3]), first)
    assert len(server.embedding_requests) == 1  # from the file, not the API


# -- faults ----------------------------------------------------------------------------


def test_429_with_retry_after_then_success(server: ChatServer, sleep: FakeSleep) -> None:
    server.add_embeddings(Fault(429, retry_after=7), Fault(429, retry_after="2.5"), Vectors(DIM))
    vectors = make(server, sleep, max_backoff=30.0).embed(TEXTS[:2])
    np.testing.assert_allclose(vectors, expected(TEXTS[:2]), atol=1e-6)
    assert sleep.waits == [7.0, 2.5]
    assert len(server.embedding_requests) == 3


def test_5xx_and_dropped_connections_then_success(server: ChatServer, sleep: FakeSleep) -> None:
    server.add_embeddings(Fault(503), Fault(500, body="upstream exploded"), DISCONNECT)
    server.add_embeddings(Vectors(DIM))
    vectors = make(server, sleep, backoff=1.0).embed(TEXTS[:3])
    np.testing.assert_allclose(vectors, expected(TEXTS[:3]), atol=1e-6)
    assert sleep.waits == [1.0, 2.0, 4.0]


def test_timeouts_are_retried_then_one_line_error(
    server: ChatServer, sleep: FakeSleep, caplog: pytest.LogCaptureFixture
) -> None:
    server.add_embeddings(Delay(5.0), Delay(5.0), Delay(5.0), Vectors(DIM))
    embedder = make(server, sleep, api_key=KEY, timeout=TIMEOUT, max_retries=2)
    with caplog.at_level(logging.DEBUG), pytest.raises(EmbeddingError) as caught:
        embedder.embed(TEXTS[:2])
    message = str(caught.value)
    assert isinstance(caught.value, CamError)
    assert f"{server.base_url}/embeddings" in message and repr(MODEL) in message
    assert f"failed after 3 attempts: timed out after {TIMEOUT:g} s" in message
    assert "\n" not in message and KEY not in message and KEY not in caplog.text
    assert len(server.embedding_requests) == 3 and len(sleep.waits) == 2


def test_timeout_then_success(server: ChatServer, sleep: FakeSleep) -> None:
    server.add_embeddings(Delay(5.0), Vectors(DIM))
    vectors = make(server, sleep, timeout=TIMEOUT, backoff=0.5).embed(TEXTS[:1])
    np.testing.assert_allclose(vectors, expected(TEXTS[:1]), atol=1e-6)
    assert sleep.waits == [0.5]


@pytest.mark.parametrize(
    ("status", "server_says", "hint"),
    [
        (401, "Incorrect API key provided", "CAM_EMBED_API_KEY, else OPENAI_API_KEY"),
        (404, "The model `test-embed` does not exist", "check the model name"),
        (400, "'$.input' is invalid", None),
    ],
)
def test_client_errors_fail_at_once_in_one_line(
    server: ChatServer, sleep: FakeSleep, status: int, server_says: str, hint: str | None
) -> None:
    body = json.dumps({"error": {"message": f"{server_says} ({KEY})"}})
    server.add_embeddings(Fault(status, body=body), Vectors(DIM))
    with pytest.raises(EmbeddingError) as caught:
        make(server, sleep, api_key=KEY).embed(TEXTS[:1])
    message = str(caught.value)
    assert message.startswith(f"embedding request to {server.base_url}/embeddings (model ")
    assert f"was rejected: HTTP {status}: {server_says}" in message
    assert (hint in message) if hint else "(check" not in message
    assert KEY not in message and "\n" not in message
    assert len(server.embedding_requests) == 1 and sleep.waits == []


def test_the_server_refuses_what_the_client_never_sends(server: ChatServer) -> None:
    # The embedder skips blank texts because APIs refuse them; the test server does too.
    server.set_embeddings_default(Vectors(DIM))
    with pytest.raises(EmbeddingError, match=r"HTTP 400: '\$.input' is invalid"):
        OpenAICompatibleEmbedder(server.base_url, MODEL, timeout=PATIENT)._request([""])


@pytest.mark.parametrize(
    ("reply", "says"),
    [
        (MALFORMED, "malformed JSON in the response"),
        (Json({"data": []}), "response has no data"),
        (Json({"error": {"message": "busy"}}), "response has no data (busy)"),
        (Json({"data": [{"index": 0, "embedding": [1.0]}]}), "1 embeddings for 2 inputs"),
        (
            Json({"data": [{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [1.0]}]}),
            "index 0 appears twice",
        ),
        (
            Json({"data": [{"index": 0, "embedding": [1.0]}, {"index": 5, "embedding": [1.0]}]}),
            "data[1].index is 5",
        ),
        (
            Json({"data": [{"index": 0, "embedding": "AAAA"}, {"index": 1, "embedding": [1]}]}),
            "data[0].embedding is not a list",
        ),
        (
            Json({"data": [{"index": 0, "embedding": [1, 2]}, {"index": 1, "embedding": [1]}]}),
            "embeddings of different lengths",
        ),
        (
            Json(
                {"data": [{"index": 0, "embedding": [1, "x"]}, {"index": 1, "embedding": [1, 2]}]}
            ),
            "not a number",
        ),
        (
            Json(
                {
                    "data": [
                        {"index": 0, "embedding": [1.0, float("nan")]},
                        {"index": 1, "embedding": [1.0, 2.0]},
                    ]
                }
            ),
            "not a list of finite numbers",
        ),
    ],
)
def test_malformed_replies_are_retried_then_named(
    server: ChatServer, sleep: FakeSleep, reply: Any, says: str
) -> None:
    server.add_embeddings(reply, reply)
    with pytest.raises(EmbeddingError) as caught:
        make(server, sleep, max_retries=1).embed(TEXTS[:2])
    assert "failed after 2 attempts" in str(caught.value)
    assert says in str(caught.value)
    assert len(server.embedding_requests) == 2


def test_a_malformed_reply_then_success(server: ChatServer, sleep: FakeSleep) -> None:
    server.add_embeddings(MALFORMED, Vectors(DIM))
    vectors = make(server, sleep).embed(TEXTS[:2])
    np.testing.assert_allclose(vectors, expected(TEXTS[:2]), atol=1e-6)


def test_items_without_index_keep_their_order(server: ChatServer, sleep: FakeSleep) -> None:
    server.add_embeddings(Json({"data": [{"embedding": [3.0, 4.0]}, {"embedding": [0.0, 2.0]}]}))
    vectors = make(server, sleep).embed(["a", "b"])
    np.testing.assert_allclose(vectors, [[0.6, 0.8], [0.0, 1.0]], atol=1e-6)


# -- the dimension ---------------------------------------------------------------------


def test_a_response_of_another_size_later_is_an_error(server: ChatServer, sleep: FakeSleep) -> None:
    server.add_embeddings(Vectors(DIM), Vectors(32))
    embedder = make(server, sleep)
    embedder.embed(TEXTS[:1])
    with pytest.raises(EmbeddingError, match="returned 32-dimensional vectors after 48-"):
        embedder.embed(TEXTS[1:2])
    assert embedder.dim == DIM


def test_a_recorded_dimension_is_checked_at_the_first_response(
    server: ChatServer, sleep: FakeSleep
) -> None:
    server.set_embeddings_default(Vectors(32))
    embedder = make(server, sleep, dim=DIM)
    assert embedder.dim == DIM and server.requests == []  # no probe: the memory knows
    with pytest.raises(EmbeddingError) as caught:
        embedder.embed(TEXTS[:1])
    message = str(caught.value)
    assert "returned 32-dimensional vectors, not the 48 recorded with the memory" in message
    assert "\n" not in message


# -- configuration ---------------------------------------------------------------------


def key_sent(server: ChatServer, variables: dict[str, str]) -> str | None:
    server.set_embeddings_default(Vectors(DIM))
    env = Environment.from_env({"CAM_EMBED_BASE_URL": server.base_url, **variables})
    embedder = load_embedder(f"openai:{MODEL}", environment=env)
    embedder.embed(["hello"])
    return server.embedding_requests[-1].headers.get("authorization")


def test_the_key_comes_from_cam_embed_api_key_before_openai_api_key(server: ChatServer) -> None:
    both = {"CAM_EMBED_API_KEY": "sk-embed", "OPENAI_API_KEY": "sk-openai"}
    assert key_sent(server, both) == "Bearer sk-embed"
    assert key_sent(server, {"OPENAI_API_KEY": "sk-openai"}) == "Bearer sk-openai"
    assert key_sent(server, {"CAM_LLM_API_KEY": "sk-chat"}) is None  # the chat's is its own
    env = Environment.from_env({"CAM_EMBED_API_KEY": "sk-embed"})
    assert "sk-embed" not in repr(env) and "embed_api_key=<set>" in repr(env)


def test_batch_size_comes_from_the_environment(server: ChatServer) -> None:
    server.set_embeddings_default(Vectors(DIM))
    env = Environment.from_env({"CAM_EMBED_BASE_URL": server.base_url, "CAM_EMBED_BATCH_SIZE": "3"})
    embedder = load_embedder(f"openai:{MODEL}", environment=env)
    embedder.embed(TEXTS[:7])
    assert [len(batch) for batch in inputs(server)] == [3, 3, 1]
    explicit = load_embedder(f"openai:{MODEL}", environment=env, batch_size=5)
    assert isinstance(explicit, OpenAICompatibleEmbedder) and explicit.batch_size == 5


def test_without_a_base_url_it_opens_but_cannot_embed() -> None:
    embedder = load_embedder(f"openai:{MODEL}", environment=Environment.from_env({}))
    assert embedder.name == f"openai:{MODEL}"  # a memory of it can still be read
    with pytest.raises(ConfigError, match="CAM_EMBED_BASE_URL must be set"):
        embedder.embed(["hello"])


@pytest.mark.parametrize(
    "options",
    [
        {"model": " "},
        {"base_url": "localhost:8000/v1"},
        {"batch_size": 0},
        {"dim": 0},
        {"timeout": 0},
        {"max_retries": -1},
    ],
)
def test_invalid_settings_raise_config_error(options: dict[str, Any]) -> None:
    arguments: dict[str, Any] = {"base_url": "http://localhost:8000/v1", "model": MODEL}
    arguments.update(options)
    with pytest.raises(ConfigError):
        OpenAICompatibleEmbedder(**arguments)


# -- under a memory --------------------------------------------------------------------


@pytest.fixture(scope="module")
def essay() -> str:
    return shared_file("haystacks/paul_graham/gap.txt").read_text()[:8000]


def api_env(server: ChatServer, path: Path) -> Environment:
    return Environment.from_env(
        {
            "CAM_STORE": str(path),
            "CAM_EMBED_MODEL": f"openai:{MODEL}",
            "CAM_EMBED_BASE_URL": server.base_url,
        }
    )


def test_the_dimension_is_recorded_and_a_new_size_on_reopen_is_refused(
    server: ChatServer, tmp_path: Path, essay: str
) -> None:
    server.set_embeddings_default(Vectors(DIM))
    env = api_env(server, tmp_path / "m.db")
    settings = Settings(chunk_tokens=60)
    with Memory.open(None, "api", settings=settings, environment=env) as memory:
        memory.ingest_text(essay[:4000], "first", batch_size=8)
        assert memory.settings.embed_model == f"openai:{MODEL}"
        assert memory.store.load_settings()["embed_dim"] == DIM  # type: ignore[index]
        before = memory.stats()
    assert before["settings"]["embed_dim"] == DIM
    assert before["embedder"] == {"model": f"openai:{MODEL}", "device": "api"}

    server.set_embeddings_default(Vectors(32))  # the same name now gives other vectors
    sent = len(server.embedding_requests)
    with Memory.open(None, "api", settings=settings, environment=env) as memory:
        with pytest.raises(EmbeddingError) as caught:
            memory.ingest_text(essay[4000:], "second", batch_size=8)
        message = str(caught.value)
        assert "32-dimensional" in message and "48 recorded with the memory" in message
        assert "\n" not in message
        assert memory.stats() == before  # nothing written
        with pytest.raises(EmbeddingError, match="32-dimensional"):
            memory.ask("what did the author think made electricity?")
    assert len(server.embedding_requests) == sent + 2  # one try each, no retries


def test_an_embedder_given_is_checked_against_the_recorded_size(
    server: ChatServer, tmp_path: Path, essay: str
) -> None:
    server.set_embeddings_default(Vectors(DIM))
    env = api_env(server, tmp_path / "m.db")
    with Memory.open(None, "api", environment=env) as memory:
        memory.ingest_text(essay[:2000], "first")
        before = memory.stats()
    server.set_embeddings_default(Vectors(32))
    given = OpenAICompatibleEmbedder(server.base_url, MODEL, timeout=PATIENT)  # knows no size
    with Memory.open(None, "api", embedder=given, environment=env) as memory:
        with pytest.raises(EmbeddingError) as caught:
            memory.ingest_text(essay[2000:4000], "second")
        assert str(caught.value) == (
            "memory 'api' holds 48-dimensional vectors (embed_dim), but embedder "
            f"'openai:{MODEL}' makes 32-dimensional ones: vectors of two sizes cannot be mixed"
        )
        assert memory.stats() == before


def test_a_memory_from_before_embed_dim_still_opens_and_grows(tmp_path: Path, essay: str) -> None:
    embedder = HashingEmbedder(64)
    env = Environment.from_env({})
    with Memory.open(tmp_path / "m.db", "old", embedder=embedder, environment=env) as memory:
        memory.ingest_text(essay[:2000], "first")
        stored = memory.store.load_settings()
        assert stored is not None and stored["embed_dim"] == 64
        del stored["embed_dim"]  # as an older version wrote it
        with memory.store.transaction():
            memory.store.save_settings(stored)
    with Memory.open(tmp_path / "m.db", "old", embedder=embedder, environment=env) as memory:
        assert memory.settings.embed_dim is None
        assert memory.ingest_text(essay[2000:4000], "second").chunks_added > 0
        assert "embed_dim" not in (memory.store.load_settings() or {})


def test_settings_compare_without_the_recorded_dimension() -> None:
    built = Settings(embed_model="openai:m", embed_dim=1536)
    asked = Settings(embed_model="openai:m")
    assert asked == built and asked.differences(built) == []
    assert Settings.from_dict({"theta": 0.4}).embed_dim is None
    with pytest.raises(ConfigError, match="embed_dim"):
        Settings(embed_dim=0)


# -- through the cam command -----------------------------------------------------------


def cam(env: dict[str, str], *args: str) -> click.testing.Result:
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def test_cam_ingest_then_ask_with_an_api_embedder(
    server: ChatServer, tmp_path: Path, essay: str
) -> None:
    server.set_embeddings_default(Vectors(64))
    document = tmp_path / "gap.txt"
    document.write_text(essay)
    env = {
        "CAM_STORE": str(tmp_path / "cli.db"),
        "CAM_EMBED_BASE_URL": server.base_url,
        "CAM_EMBED_API_KEY": KEY,
        "CAM_EMBED_BATCH_SIZE": "16",
        "CAM_EMBED_MODEL": "",
        "OPENAI_API_KEY": "",
    }
    model = ["--embed-model", f"openai:{MODEL}"]
    result = cam(env, "ingest", str(document), *model, "--batch-size", "8")
    assert result.exit_code == 0, result.output
    assert "ingested" in result.output
    requests = server.embedding_requests
    assert requests and all(r.headers["authorization"] == f"Bearer {KEY}" for r in requests)
    assert max(len(r.body["input"]) for r in requests) <= 16
    # The same options again: the recorded dimension is no settings conflict.
    again = cam(env, "ingest", str(document), *model, "--batch-size", "8")
    assert again.exit_code == 0 and "nothing new" in again.output, again.output

    # Reading a memory needs no API: stats works without CAM_EMBED_BASE_URL.
    stats = cam({**env, "CAM_EMBED_BASE_URL": ""}, "stats")
    assert stats.exit_code == 0, stats.output
    assert f"embedding: openai:{MODEL} through its API" in stats.output
    assert "embed_dim=64" in stats.output

    asked = cam(env, "ask", "What did he think electricity was created by?", "--json")
    assert asked.exit_code == 0, asked.output
    answer = json.loads(asked.output)
    assert "electric sockets" in " ".join(answer["evidence"][0]["text"].split())
    assert "electric sockets" in " ".join(answer["answer"].split())
    assert server.embedding_requests[-1].body["input"] == [
        "What did he think electricity was created by?"
    ]
    assert all(r.path == EMBEDDINGS_PATH for r in server.requests)


def test_cam_reports_an_api_failure_in_one_line(
    server: ChatServer, tmp_path: Path, essay: str
) -> None:
    server.set_embeddings_default(Fault(401, body='{"error": {"message": "bad key"}}'))
    document = tmp_path / "gap.txt"
    document.write_text(essay[:2000])
    env = {
        "CAM_STORE": str(tmp_path / "cli.db"),
        "CAM_EMBED_BASE_URL": server.base_url,
        "CAM_EMBED_API_KEY": "",
        "OPENAI_API_KEY": "",
    }
    result = cam(env, "ingest", str(document), "--embed-model", f"openai:{MODEL}")
    assert result.exit_code == 1
    [line] = result.output.strip().splitlines()
    assert line.startswith("Error: embedding request to ") and "HTTP 401: bad key" in line
    assert not (tmp_path / "cli.db").exists()  # nothing written: no empty store left behind
