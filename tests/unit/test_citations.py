"""Where evidence is in its document: a PDF's pages, and ``cam ask``'s citations."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from cam_engine import Memory
from cam_engine.cli.main import cli
from cam_engine.embed import HashingEmbedder
from cam_engine.formats import page_starts, pages_of
from cam_engine.sources import load_document
from tests.support.documents import pdf_bytes, text_page

# Three pages of distinct words, each page long enough to be its own chunks.
PAGES = [
    [f"Harpoons and whaleboats line {i}, the Pequod sails on." for i in range(30)],
    [f"Glaciers and ice fields line {i}, the creature waits there." for i in range(30)],
    [f"Ballrooms and letters line {i}, Netherfield is let at last." for i in range(30)],
]


def test_each_chunk_of_a_pdf_knows_its_pages(tmp_path: Path) -> None:
    path = tmp_path / "paper.pdf"
    path.write_bytes(pdf_bytes(*(text_page(*lines) for lines in PAGES)))
    document = load_document(path)
    assert [number for number, _ in document.page_starts] == [1, 2, 3]
    with Memory.open(tmp_path / "m.db", embedder=HashingEmbedder(64)) as memory:
        memory.ingest([path])
        chunks = memory.document_chunks("paper.pdf")
        assert len(chunks) > 3
        for chunk in chunks:
            first, last = chunk.props["pages"]
            start, end = chunk.props["start_char"], chunk.props["end_char"]
            assert document.text[start:end] == chunk.text
            # The page a chunk says it is on holds its words.
            words = {1: "Harpoons", 2: "Glaciers", 3: "Ballrooms"}
            assert words[first] in chunk.text and words[last] in chunk.text
        result = memory.ask("Where does the creature wait on the ice?", strategy="dense")
    cited = [e for e in result.evidence if e.pages == [2]]
    assert cited and all(e.citation.endswith(" p.2") for e in cited)
    assert all(e.citation.startswith("paper.pdf:") for e in result.evidence)


def test_pages_of_a_span_across_a_page_break() -> None:
    starts = page_starts([(1, "a" * 10), (3, "b" * 10)])  # page 2 had no text
    assert starts == [(1, 0), (3, 12)]
    assert pages_of(starts, 0, 10) == (1, 1)
    assert pages_of(starts, 5, 20) == (1, 3)
    assert pages_of(starts, 12, 22) == (3, 3)
    assert pages_of([], 0, 5) is None


def test_cam_ask_keeps_to_a_document_and_prints_citations(tmp_path: Path) -> None:
    env = {"CAM_STORE": str(tmp_path / "cli.db"), "CAM_EMBED_MODEL": "hashing:64"}
    whales = tmp_path / "whales.txt"
    whales.write_text("\n\n".join(f"Elizabeth watched whale {i} from the ship." for i in range(40)))
    balls = tmp_path / "balls.txt"
    balls.write_text("\n\n".join(f"Elizabeth danced at ball {i} with Darcy." for i in range(40)))
    runner = CliRunner()
    ingest = runner.invoke(cli, ["ingest", str(whales), str(balls)], env=env)
    assert ingest.exit_code == 0, ingest.output

    def ask(*extra: str) -> list[dict]:
        args = ["ask", "What did Elizabeth do?", "--strategy", "hybrid", "--json", *extra]
        result = runner.invoke(cli, args, env=env)
        assert result.exit_code == 0, result.output
        return json.loads(result.output)["evidence"]

    assert {e["document"] for e in ask()} == {"whales.txt", "balls.txt"}
    scoped = ask("--document", "balls.txt")
    assert {e["document"] for e in scoped} == {"balls.txt"}
    text = balls.read_text()
    for e in scoped:
        assert text[e["start_char"] : e["end_char"]] == e["text"]
        assert e["citation"] == f"balls.txt:{e['start_char']}-{e['end_char']}"
    both = ask("--document", "balls.txt", "--document", "whales.txt")
    assert {e["document"] for e in both} == {"whales.txt", "balls.txt"}
    # The plain output shows each citation beside its evidence.
    plain = runner.invoke(cli, ["ask", "Darcy", "--document", "balls.txt"], env=env)
    assert plain.exit_code == 0, plain.output
    assert "balls.txt:" in plain.output and "whales.txt" not in plain.output
    # An unknown id: one line naming the memory's documents.
    wrong = runner.invoke(cli, ["ask", "Darcy", "--document", "balls"], env=env)
    assert wrong.exit_code != 0
    line = wrong.output.strip()
    assert "no document 'balls'" in line and "balls.txt" in line and "whales.txt" in line
    assert "\n" not in line
