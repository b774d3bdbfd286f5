"""Reads kept under allowed folders (``cam mcp --allow``): what is checked is the file
opened, not the name, so a name swapped for a link out of the folders between the
check and the read is refused and nothing of the file outside reaches the memory."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from cam_engine import Environment, Memory, Settings
from cam_engine import sources as sources_module
from cam_engine.embed import HashingEmbedder
from cam_engine.errors import InputError
from cam_engine.serve.tools import MemoryTools
from cam_engine.sources import AllowedRoots, load_document, open_document

SECRET = "the launch code of the polar expedition is walrus"
NOTES = "Notes on the voyage north, written on the deck of the ship."


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    """An allowed folder with notes in it and a folder outside it holding a secret."""
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    (allowed / "sub").mkdir(parents=True)
    outside.mkdir()
    (allowed / "notes.txt").write_text(NOTES, "utf-8")
    (allowed / "sub" / "notes.txt").write_text(NOTES, "utf-8")
    (outside / "notes.txt").write_text(SECRET, "utf-8")
    return allowed, outside


def swap_file_for_link(allowed: Path, outside: Path) -> None:
    (allowed / "notes.txt").unlink()
    (allowed / "notes.txt").symlink_to(outside / "notes.txt")


def swap_folder_for_link(allowed: Path, outside: Path) -> None:
    (allowed / "sub").rename(allowed / "sub-was")
    (allowed / "sub").symlink_to(outside, target_is_directory=True)


class SwappingTools(MemoryTools):
    """The server's tools, with the swap made right after the tool checked the path:
    where the ingest would wait for the lock while another ingest runs."""

    swap: Callable[[], None] = staticmethod(lambda: None)

    def allowed_path(self, path: str) -> Path:
        target = super().allowed_path(path)
        self.swap()
        return target


def tools_for(store: Path, allowed: Path) -> SwappingTools:
    env = Environment.from_env({"CAM_STORE": str(store), "CAM_EMBED_MODEL": "hashing:64"})
    tools = SwappingTools(None, "m", environment=env, allow=[allowed])
    tools.load()
    return tools


def stored_texts(store: Path) -> str:
    with Memory.open(store, "m", create=False) as memory:
        return " ".join(chunk.text for chunk in memory.chunks())


@pytest.mark.parametrize(
    ("swap", "named"),
    [(swap_file_for_link, "notes.txt"), (swap_folder_for_link, "sub/notes.txt")],
    ids=["file", "folder-component"],
)
def test_a_file_swapped_for_a_link_out_after_the_check_is_never_read(
    tree: tuple[Path, Path], tmp_path: Path, swap: Callable[[Path, Path], None], named: str
) -> None:
    allowed, outside = tree
    store = tmp_path / "s.db"
    tools = tools_for(store, allowed)
    try:
        tools.ingest_text("A first text creates the memory.", "seed")
        tools.swap = lambda: swap(allowed, outside)
        with pytest.raises(InputError) as refused:
            tools.ingest_file(str(allowed / named))
    finally:
        tools.close()
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(f"{allowed / named}: ") and "outside the allowed folders" in message
    assert "walrus" not in stored_texts(store)


def test_a_folder_ingest_checks_each_file_as_it_opens_it(
    tree: tuple[Path, Path], tmp_path: Path
) -> None:
    allowed, outside = tree
    store = tmp_path / "s.db"
    tools = tools_for(store, allowed)
    tools.swap = lambda: swap_file_for_link(allowed, outside)
    try:
        report = tools.ingest_file(str(allowed))
    finally:
        tools.close()
    # The folder's other file is read; the swapped one is an error of its own, one line.
    assert report["documents"] == ["sub/notes.txt"]
    (error,) = report["errors"]
    assert error["source"] == str(allowed / "notes.txt")
    assert "outside the allowed folders" in error["message"] and "\n" not in error["message"]
    assert "walrus" not in stored_texts(store)


def test_the_swap_between_resolving_and_opening_is_caught_on_the_opened_file(
    tree: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """open_document's own window: the name resolved inside the root, then swapped
    before the open. A final link is not followed (O_NOFOLLOW); a folder component
    swapped in is caught on the descriptor (its real path and inode)."""
    allowed, outside = tree
    allow = AllowedRoots.of([allowed])
    resolve = sources_module._resolved

    def resolving_then(swap: Callable[[Path, Path], None]) -> Callable[[Path], Path]:
        def resolved(path: Path) -> Path:
            target = resolve(path)
            swap(allowed, outside)
            return target

        return resolved

    monkeypatch.setattr(sources_module, "_resolved", resolving_then(swap_file_for_link))
    with pytest.raises(InputError, match="changed after it was checked"):
        load_document(allowed / "notes.txt", allow=allow)
    monkeypatch.setattr(sources_module, "_resolved", resolving_then(swap_folder_for_link))
    with pytest.raises(InputError, match="changed after it was checked"):
        load_document(allowed / "sub" / "notes.txt", allow=allow)


def test_links_inside_the_roots_are_followed_and_any_file_without_roots(
    tree: tuple[Path, Path],
) -> None:
    allowed, outside = tree
    (allowed / "inner.txt").symlink_to(allowed / "sub" / "notes.txt")
    allow = AllowedRoots.of([allowed])
    assert load_document(allowed / "inner.txt", allow=allow).text == NOTES
    with pytest.raises(InputError, match="outside the allowed folders"):
        load_document(outside / "notes.txt", allow=allow)
    # No roots (`cam ingest`, the API's default): any file, through any link.
    (allowed / "out.txt").symlink_to(outside / "notes.txt")
    assert load_document(allowed / "out.txt").text == SECRET


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        open_document(fifo, AllowedRoots.of([tmp_path]))


def test_a_nul_in_an_ingest_file_path_is_a_one_line_input_error(
    tree: tuple[Path, Path], tmp_path: Path
) -> None:
    allowed, _ = tree
    tools = tools_for(tmp_path / "s.db", allowed)
    try:
        with pytest.raises(InputError, match="cannot hold a NUL") as refused:
            tools.ingest_file(f"{allowed}/notes.txt\x00.pdf")
    finally:
        tools.close()
    assert "\n" not in str(refused.value)


def test_stdin_is_refused_when_reads_are_kept_to_roots(tree: tuple[Path, Path]) -> None:
    allowed, _ = tree
    settings = Settings(embed_model="hashing:64")
    with Memory.open(
        allowed.parent / "s.db", "m", settings=settings, embedder=HashingEmbedder(64)
    ) as memory:
        report = memory.ingest(["-"], allow=[allowed])
    (error,) = report.errors
    assert error.message.startswith("stdin is not a file under the allowed folders")
