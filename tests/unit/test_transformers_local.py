"""The local transformers backend on a tiny model built here (random weights, a word
tokenizer trained on three sentences): real loading, chat template and generation."""

from __future__ import annotations

from pathlib import Path

import pytest

from cam_engine.errors import ConfigError
from cam_engine.llm import Message
from cam_engine.llm.transformers_local import TransformersChat

TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }} {% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    folder = tmp_path_factory.mktemp("tiny-model")
    words = Tokenizer(models.WordLevel(unk_token="<unk>"))
    words.pre_tokenizer = pre_tokenizers.Whitespace()
    specials = ["<unk>", "<eos>", "<|system|>", "<|user|>", "<|assistant|>"]
    words.train_from_iterator(
        ["the whale is white", "call me ishmael", "what is the answer ?"],
        trainers.WordLevelTrainer(special_tokens=specials),
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=words, unk_token="<unk>", eos_token="<eos>", pad_token="<eos>"
    )
    tokenizer.chat_template = TEMPLATE
    tokenizer.save_pretrained(folder)
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=64,
        n_embd=16,
        n_layer=1,
        n_head=2,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.eos_token_id,
    )
    GPT2LMHeadModel(config).save_pretrained(folder)
    return folder


def test_generates_with_the_chat_template_and_token_limit(tiny_model: Path) -> None:
    chat = TransformersChat(tiny_model, device="cpu")
    messages = [Message("system", "the answer"), Message("user", "call me ishmael")]
    first = chat.complete(messages, max_tokens=3)
    # <|system|> the answer <|user|> call me ishmael <|assistant|> = 8 word tokens
    assert first.usage.prompt_tokens == 8
    assert 1 <= first.usage.completion_tokens <= 3 and first.usage.calls == 1
    assert first.model == f"local:{tiny_model.name}"
    assert chat.complete(messages, max_tokens=3).text == first.text  # greedy: deterministic


def test_missing_directory_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        TransformersChat(tmp_path / "nope")
