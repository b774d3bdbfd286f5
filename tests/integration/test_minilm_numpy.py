"""The numpy runtime of the default model gives sentence-transformers' vectors, on
Frankenstein's chunks and on questions (one past the 256 word pieces the model reads)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cam_engine.chunking import chunk_document
from cam_engine.embed.minilm_numpy import MiniLMNumpyEmbedder
from cam_engine.embed.sentence_transformers import (
    SentenceTransformerEmbedder,
    resolve_model_path,
)
from cam_engine.sources import read_text
from tests.conftest import shared_file

pytestmark = [pytest.mark.realdata, pytest.mark.model]

MODEL = "all-MiniLM-L6-v2"
QUESTIONS = [
    "Who is Elizabeth Lavenza?",
    "How did Victor Frankenstein die?",
    "  What did the creature demand Victor make for him?\n",  # white space around it
    "WHERE DID THE CREATURE MEET VICTOR?",  # the tokenizer lower-cases
    "Qu'est-ce que Genève — et Ingolstadt, où Victor étudia ?",  # accents kept
    "",
]
MAX_COSINE_DISTANCE = 1e-4


@pytest.fixture(scope="module")
def texts() -> list[str]:
    book = shared_file("haystacks/gutenberg/pg84.txt")
    text, _ = read_text(book)
    chunks = [c.text for c in chunk_document(book.name, text, 200)]
    long_question = "What happens in this passage? " + " ".join(chunks[40:43])
    return [*QUESTIONS, long_question, *chunks[:40], *chunks[200:224]]


def test_numpy_and_torch_give_the_same_vectors(texts: list[str]) -> None:
    numpy_runtime = MiniLMNumpyEmbedder(MODEL, Path(resolve_model_path(MODEL)))
    torch_runtime = SentenceTransformerEmbedder(MODEL, device="cpu")
    long_question = texts[len(QUESTIONS)]
    assert numpy_runtime.count_word_pieces(long_question) > 256

    ours, theirs = numpy_runtime.embed(texts), torch_runtime.embed(texts)

    assert ours.shape == theirs.shape == (len(texts), 384) and ours.dtype == np.float32
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    distance = 1.0 - np.sum(ours * theirs, axis=1)
    assert distance.max() <= MAX_COSINE_DISTANCE, texts[int(distance.argmax())][:80]
    # One at a time (no padding) gives what the batch gave.
    alone = numpy_runtime.embed([long_question])[0]
    assert 1.0 - float(alone @ ours[len(QUESTIONS)]) <= MAX_COSINE_DISTANCE
    assert numpy_runtime.max_seq_length == torch_runtime.max_seq_length == 256
    assert numpy_runtime.count_word_pieces(long_question) == torch_runtime.count_word_pieces(
        long_question
    )
