"""Naming a model (``--llm``, ``--summarizer``, ``CAM_LLM``) and opening it: the spec
parser's one-line errors, the llama.cpp server's settings from the environment, the
missing extra, and the server's lifetime (the real SmolLM2-135M model where it is
installed)."""

from __future__ import annotations

import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import click
import pytest
from click.testing import CliRunner

from cam_engine.cli.main import cli
from cam_engine.cli.options import chat_for
from cam_engine.config import Environment
from cam_engine.errors import ConfigError, LLMError
from cam_engine.llm import llamacpp
from cam_engine.llm.backends import LLMSpec, open_chat, parse_llm_spec
from cam_engine.llm.llamacpp import LlamaCppServer, LlamaCppSettings
from tests import local_llm
from tests.local_llm import MODEL_NAME, require_local_model

SMALL = LlamaCppSettings(threads=1, context_tokens=512)


@pytest.fixture()
def fake_gguf(tmp_path: Path) -> Path:
    """A file that passes the GGUF check, for the steps before llama.cpp reads it."""
    path = tmp_path / "tiny.gguf"
    path.write_bytes(b"GGUF" + bytes(28))
    return path


@pytest.fixture()
def no_cam_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CAM_LLM", raising=False)


# -- naming a model -------------------------------------------------------------------


def test_each_kind_of_model_is_named_by_one_string(tmp_path: Path, fake_gguf: Path) -> None:
    assert parse_llm_spec("extractive") == LLMSpec("extractive")
    assert parse_llm_spec(" openai ") == LLMSpec("openai")
    assert parse_llm_spec(f"local:{fake_gguf}") == LLMSpec("llamacpp", fake_gguf)
    assert parse_llm_spec(f"local:{tmp_path}") == LLMSpec("transformers", tmp_path)
    assert not LLMSpec("extractive").is_model and LLMSpec("openai").is_model


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("local", "a local model needs its path: local:PATH.gguf"),
        ("local:", "a local model needs its path: local:PATH.gguf"),
        ("local:/nowhere/model.gguf", "local model not found: /nowhere/model.gguf"),
        ("gpt-4o", "unknown model 'gpt-4o': use extractive, openai"),
        ("--model-dir", "unknown model '--model-dir'"),
    ],
)
def test_a_bad_spec_is_one_line_naming_it(spec: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_llm_spec(spec)
    assert str(raised.value).startswith(message) and "\n" not in str(raised.value)


def test_a_file_that_is_not_gguf_is_refused_before_llama_cpp_reads_it(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a model\n")
    spec = f"local:{text}"
    with pytest.raises(ConfigError, match=r"notes.txt is not a GGUF model file"), open_chat(spec):
        pass


def test_an_unreadable_gguf_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"local model not found: .*gone.gguf"):
        LlamaCppServer(tmp_path / "gone.gguf")


def test_without_the_extra_the_error_says_what_to_install(
    fake_gguf: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # import xllamacpp: ImportError
    with pytest.raises(ConfigError) as raised, open_chat(f"local:{fake_gguf}"):
        pass
    assert "pip install 'cam-engine[local-llm]'" in str(raised.value)
    assert "\n" not in str(raised.value)


def test_the_cli_reports_the_missing_extra_in_one_line(
    fake_gguf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_cam_llm: None
) -> None:
    monkeypatch.setitem(sys.modules, "xllamacpp", None)
    text = tmp_path / "a.txt"
    text.write_text("Some text.\n")
    args = ["ingest", str(text), "--store", str(tmp_path / "m.db")]
    result = CliRunner().invoke(cli, [*args, "--summarizer", f"local:{fake_gguf}"])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "Error: a local GGUF model needs llama.cpp: pip install 'cam-engine[local-llm]' "
        "(from a checkout: pip install -e '.[local-llm]')"
    ]
    assert not (tmp_path / "m.db").exists()  # refused before anything was written


# -- CAM_LLM and the flags ------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "option"),
    [(["ask", "q"], "--llm"), (["ingest", "a.txt"], "--summarizer"), (["mcp"], "--llm")],
)
def test_cam_llm_is_the_default_of_the_model_options(
    command: list[str], option: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CAM_LLM", "local:/nowhere/model.gguf")
    result = CliRunner().invoke(cli, [*command, "--store", str(tmp_path / "none.db")])
    assert result.exit_code == 2
    assert "local model not found: /nowhere/model.gguf" in result.output
    assert "(from $CAM_LLM)" in result.output  # the user never typed the option it names


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["ask", "q", "--llm", "extractive"], "no store at"),
        (["ask", "q", "--llm=extractive"], "no store at"),
        (["ingest", "--summarizer", "extractive"], "give at least one PATH"),
    ],
)
def test_an_explicit_flag_beats_cam_llm(
    args: list[str], error: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CAM_LLM", "local:/nowhere/model.gguf")
    result = CliRunner().invoke(cli, [*args, "--store", str(tmp_path / "none.db")])
    # Past the options: the command went on to its own checks, never to the model.
    assert error in result.output and "model" not in result.output, result.output


def test_a_flag_names_the_model_without_mentioning_cam_llm(
    tmp_path: Path, no_cam_llm: None
) -> None:
    result = CliRunner().invoke(cli, ["ask", "q", "--llm", "local"])
    assert result.exit_code == 2
    assert "'--llm': a local model needs its path" in result.output
    assert "CAM_LLM)" not in result.output


# -- llama.cpp's settings from the environment ------------------------------------------


class RecordingServer:
    """Stands in for ``LlamaCppServer``: records how it was made and opened."""

    made: ClassVar[list[RecordingServer]] = []

    def __init__(self, model_path: Path, settings: LlamaCppSettings, **options: Any) -> None:
        self.model_path, self.settings, self.options = model_path, settings, options
        self.entered = self.exited = 0
        RecordingServer.made.append(self)

    def __enter__(self) -> str:
        self.entered += 1
        return f"chat of {self.model_path.name}"

    def __exit__(self, *exc: object) -> None:
        self.exited += 1


@pytest.fixture()
def recording(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[RecordingServer]]:
    RecordingServer.made = []
    monkeypatch.setattr(llamacpp, "LlamaCppServer", RecordingServer)
    yield RecordingServer


def test_the_environment_sets_threads_context_and_gpu_layers(
    fake_gguf: Path, recording: type[RecordingServer]
) -> None:
    env = Environment.from_env(
        {
            "CAM_LLM_THREADS": "1",
            "CAM_LLM_CONTEXT": "1024",
            "CAM_LLM_GPU_LAYERS": "0",
            "CAM_LLM_TIMEOUT": "30",
            "CAM_LLM_MAX_RETRIES": "0",
            "CAM_LLM_MAX_TOKENS": "64",
            "CAM_LLM_STRUCTURED": "off",
        }
    )
    with open_chat(f"local:{fake_gguf}", env):
        pass
    (server,) = recording.made
    assert server.settings == LlamaCppSettings(threads=1, context_tokens=1024, gpu_layers=0)
    assert server.options == {
        "request_timeout_s": 30.0,
        "request_retries": 0,
        "structured": False,
        "max_reply_tokens": 64,
    }
    assert (server.entered, server.exited) == (1, 1)


def test_without_settings_llama_cpp_gets_the_defaults(
    fake_gguf: Path, recording: type[RecordingServer]
) -> None:
    with open_chat(f"local:{fake_gguf}", Environment.from_env({})):
        pass
    (server,) = recording.made
    assert server.settings == LlamaCppSettings()
    assert server.settings.context_tokens == 8192 and server.settings.gpu_layers == -1
    assert 1 <= server.settings.thread_count <= 8


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("CAM_LLM_THREADS", "two", "CAM_LLM_THREADS must be a number, got 'two'"),
        ("CAM_LLM_THREADS", "-1", "llama.cpp threads must be an integer >= 0, got -1"),
        ("CAM_LLM_CONTEXT", "100", "llama.cpp context_tokens must be an integer >= 256"),
        ("CAM_LLM_GPU_LAYERS", "-2", "llama.cpp gpu_layers must be an integer >= -1"),
    ],
)
def test_a_bad_setting_is_one_line(
    fake_gguf: Path, variable: str, value: str, message: str, recording: type[RecordingServer]
) -> None:
    with pytest.raises(ConfigError, match=message):  # noqa: SIM117 (the env is read in it)
        with open_chat(f"local:{fake_gguf}", Environment.from_env({variable: value})):
            pass
    assert recording.made == []


def test_a_command_shares_one_server_per_model_and_stops_it_when_it_ends(
    fake_gguf: Path, tmp_path: Path, recording: type[RecordingServer]
) -> None:
    """mcp's --summarizer and --llm naming the same model get one server."""
    other = tmp_path / "other.gguf"
    other.write_bytes(fake_gguf.read_bytes())
    env = Environment.from_env({})
    with click.Context(cli):
        summarizer_chat = chat_for(f"local:{fake_gguf}", env)
        answer_chat = chat_for(f"local:{fake_gguf}", env)
        other_chat = chat_for(f"local:{other}", env)
        assert chat_for("extractive", env) is None
        assert summarizer_chat is answer_chat and other_chat != summarizer_chat
        assert [(s.entered, s.exited) for s in recording.made] == [(1, 0), (1, 0)]
    assert [(s.entered, s.exited) for s in recording.made] == [(1, 1), (1, 1)]


def test_a_failing_command_still_stops_its_server(
    fake_gguf: Path, recording: type[RecordingServer]
) -> None:
    with pytest.raises(RuntimeError), click.Context(cli):
        chat_for(f"local:{fake_gguf}", Environment.from_env({}))
        raise RuntimeError("the command failed")
    (server,) = recording.made
    assert (server.entered, server.exited) == (1, 1)


# -- the real llama.cpp server -----------------------------------------------------------


def answers_health(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/health", timeout=5) as reply:
            return bool(reply.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def server_base(endpoint: str) -> str:
    return endpoint.removesuffix("/v1/chat/completions")


@pytest.fixture(scope="module")
def model() -> Path:
    return require_local_model()


def test_a_missing_model_skips_or_under_cam_require_local_llm_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(local_llm.importlib.util, "find_spec", lambda name: None)
    monkeypatch.delenv("CAM_REQUIRE_LOCAL_LLM", raising=False)
    with pytest.raises(pytest.skip.Exception, match="xllamacpp is not installed"):
        require_local_model()
    monkeypatch.setenv("CAM_REQUIRE_LOCAL_LLM", "1")
    with pytest.raises(pytest.fail.Exception, match="CAM_REQUIRE_LOCAL_LLM=1 but xllamacpp"):
        require_local_model()


@pytest.mark.local_llm
def test_the_real_server_answers_while_open_and_not_after(model: Path) -> None:
    server = LlamaCppServer(model, SMALL)
    with server as chat:
        base = server_base(chat.endpoint)
        assert base.startswith("http://127.0.0.1:") and answers_health(base)
        assert chat.name == MODEL_NAME == server.model_name
    assert not answers_health(base)
    with pytest.raises(LLMError, match="is not running"):
        _ = server.chat


@pytest.mark.local_llm
def test_the_real_server_stops_when_the_block_raises(model: Path) -> None:
    with pytest.raises(KeyError), LlamaCppServer(model, SMALL) as chat:
        base = server_base(chat.endpoint)
        assert answers_health(base)
        raise KeyError("the command failed")
    assert not answers_health(base)


@pytest.mark.local_llm
def test_open_chat_stops_the_real_server(model: Path) -> None:
    env = Environment.from_env({"CAM_LLM_THREADS": "1", "CAM_LLM_CONTEXT": "512"})
    with open_chat(f"local:{model}", env) as chat:
        assert chat is not None and chat.name == MODEL_NAME
        base = server_base(chat.endpoint)
        assert answers_health(base)
    assert not answers_health(base)


@pytest.mark.local_llm
def test_mcp_options_naming_one_real_model_share_its_server(model: Path) -> None:
    env = Environment.from_env({"CAM_LLM_THREADS": "1", "CAM_LLM_CONTEXT": "512"})
    with click.Context(cli):
        summarizer_chat = chat_for(f"local:{model}", env)
        answer_chat = chat_for(f"local:{model}", env)
        assert summarizer_chat is answer_chat is not None
        base = server_base(answer_chat.endpoint)
        assert answers_health(base)
    assert not answers_health(base)
