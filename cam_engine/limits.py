"""What one input may cost: the bounds checked before the work, and the settings that raise them.

A reader, the chunker or a server that meets input past one of these bounds refuses it
with one line naming the bound and the ``CAM_*`` variable that raises it (``refusal``),
before spending the time or memory the input asks for. The defaults sit far above any
real document (the longest Project Gutenberg books are under 5 MB of text) and far
below what would take this project's 2-core, 24 GiB machine past a minute or a
gigabyte on one input: docs/reliability.md, "Adversarial input and clients", has the
measurements.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from cam_engine.errors import ConfigError, InputError

MIB = 1 << 20


@dataclass(frozen=True)
class Limits:
    """Bounds on the cost of one input. Each field names its ``CAM_*`` variable in
    ``VARIABLES``; the variables are read once, by ``Environment.from_env``."""

    # Bytes read from one file of any format, checked on its size before it is read.
    file_bytes: int = 256 * MIB
    # Characters of text one document may hold when read whole: what a PDF, EPUB or
    # HTML reader extracts, what ingest_text accepts. (Stdin streams: no total bound.)
    text_chars: int = 64 * MIB
    # Bytes a compressed document may unpack: an EPUB's entries read, a PDF's content
    # streams decoded, each document's all together (a zip bomb's bound).
    unpacked_bytes: int = 256 * MIB
    # Items of markup one HTML page or EPUB may hold (start and end tags, runs of text,
    # comments, character references), counted as they are parsed: each costs a few
    # microseconds of pure-Python parsing, so this bounds the time an HTML reader takes.
    # It bounds the open-element stack too (unclosed tags pile up on it).
    markup_items: int = 4_000_000
    # Bytes of PDF content streams parsed for text, all pages together (a stream shared
    # by pages or drawn again as a form is counted each time it is parsed): pypdf
    # parses about 1 MB a second.
    pdf_content_bytes: int = 32 * MIB
    # Characters of text one PDF page may give: pypdf's cost grows with the square of
    # a page's text, and a dense printed page holds under 10,000.
    page_chars: int = 128 * 1024
    # Files one folder given to ingest may hold (hidden ones not counted), checked as the
    # folder is walked, before any is read: 2,000 small files take 40 s to ingest here.
    folder_files: int = 10_000
    # Characters of a question or a search query.
    query_chars: int = 10_000

    def __post_init__(self) -> None:
        for name in VARIABLES:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"limit {name} must be a positive integer, got {value!r}")

    def check_query(self, query: str, what: str = "the question") -> None:
        """A question or search query within ``query_chars``, else its refusal."""
        if len(query) > self.query_chars:
            raise refusal(f"{what}: {len(query):,} characters", "query_chars", self.query_chars)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Limits:
        """The defaults, with each ``CAM_MAX_*`` variable set in ``env`` taking its place."""
        given: dict[str, int] = {}
        for name, (variable, unit, _) in VARIABLES.items():
            text = env.get(variable)
            if not text:
                continue
            try:
                number = float(text)
            except ValueError:
                raise ConfigError(f"{variable} must be a number, got {text!r}") from None
            if not number > 0:
                raise ConfigError(f"{variable} must be a positive number, got {text!r}")
            given[name] = int(number * unit)
        return cls(**given)


# field -> (environment variable, how many of the field's units one of the variable's
# is, and what the variable counts)
VARIABLES: dict[str, tuple[str, int, str]] = {
    "file_bytes": ("CAM_MAX_FILE_MB", MIB, "MiB"),
    "text_chars": ("CAM_MAX_TEXT_MB", MIB, "Mi characters"),
    "unpacked_bytes": ("CAM_MAX_UNPACKED_MB", MIB, "MiB"),
    "markup_items": ("CAM_MAX_MARKUP_ITEMS", 1, "items of markup"),
    "pdf_content_bytes": ("CAM_MAX_PDF_CONTENT_MB", MIB, "MiB of PDF content streams"),
    "page_chars": ("CAM_MAX_PAGE_CHARS", 1, "characters on a page"),
    "folder_files": ("CAM_MAX_FOLDER_FILES", 1, "files in a folder"),
    "query_chars": ("CAM_MAX_QUERY_CHARS", 1, "characters"),
}


def refusal(what: str, limit: str, value: int) -> InputError:
    """The one-line refusal of input past ``limit`` (a field of ``Limits``): ``what``
    names the input and how far it goes ("notes.pdf: 300 MB"), then the bound and the
    variable that raises it."""
    variable, unit, label = VARIABLES[limit]
    if value % unit == 0:
        shown = f"{value // unit:,} {label}"
    else:  # a limit set to a fraction of a MiB: counted in what the unit counts
        shown = f"{value:,} {'bytes' if label == 'MiB' else 'characters'}"
    return InputError(f"{what}: refused, over the limit of {shown} (raise it with {variable})")
