"""The text of an HTML document, read in one pass: what ``formats.html_text`` returns.

The standard library's ``html.parser`` tokenizes the page, and each event is turned into
text at once, so the cost is linear in the page and the memory is the text plus the
stack of open elements. (A BeautifulSoup tree of the same page took gigabytes for an
EPUB of tiny paragraphs and quadratic time for deeply nested elements.) The tree those
events describe is BeautifulSoup's with ``html.parser``: an end tag closes the open
elements up to its own, a stray one is ignored, void elements (``br``, ``img``) close
at once, nothing is closed implicitly. The text is the one it gave: the same
paragraphs and lines.

Every event counts toward ``Limits.markup_items`` and the text toward
``Limits.text_chars``; past either the document is refused in one line. Unclosed tags
pile up on the open-element stack, one entry per start tag, so the items bound bounds
the stack too.
"""

from __future__ import annotations

import html
import html.entities
import re
from html.parser import HTMLParser

from cam_engine.errors import InputError
from cam_engine.limits import Limits, refusal

# Never text: dropped with all they hold.
NOT_TEXT = frozenset(("head", "script", "style", "noscript", "template", "nav"))
# On a web page, dropped too: asides, and headers and footers of the page itself (those
# of an article or section hold its title and byline, and stay).
PAGE_CHROME = frozenset(("aside", "header", "footer"))
_HELD_CHROME = frozenset(("header", "footer"))
_CHROME_HOLDERS = ("article", "section")
BLOCKS = frozenset(
    (
        *("p", "div", "section", "article", "main", "body", "blockquote", "pre", "address"),
        *("h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "dl", "dt", "dd"),
        *("table", "tr", "caption", "figure", "figcaption", "hr", "aside", "header", "footer"),
    )
)
_CELLS = frozenset(("td", "th"))
# Closed as soon as they open (BeautifulSoup's list for HTML).
VOID = frozenset(
    (
        *("area", "base", "basefont", "bgsound", "br", "col", "command", "embed", "frame"),
        *("hr", "image", "img", "input", "isindex", "keygen", "link", "menuitem", "meta"),
        *("nextid", "param", "source", "spacer", "track", "wbr"),
    )
)
# Text inside these is not the page's text: ruby annotations (and scripts, styles and
# templates, dropped anyway).
_NOT_READ = frozenset(("rt", "rp", "script", "style", "template"))

# Private-use characters as markers: no document text holds them, and (unlike the ASCII
# separators) they are not white space, so collapsing the source's spaces keeps them.
PARAGRAPH, LINE = "\ue000", "\ue001"
_SPACES = re.compile(r"\s+")
_UNCLOSED = re.compile(r"<[A-Za-z/!?]")
_FLUSH_PIECES = 4096  # pieces of text joined (and their spaces collapsed) at a time
_FLUSH_CHARS = 1 << 20


class Budget:
    """What one document may still cost: items of markup parsed and characters of
    text kept. An EPUB's documents share one."""

    def __init__(self, source: str, limits: Limits) -> None:
        self.source, self.limits = source, limits
        self.items_left = limits.markup_items
        self.chars_left = limits.text_chars

    def item(self) -> None:
        self.items_left -= 1
        if self.items_left < 0:
            raise refusal(
                f"{self.source}: more markup than that", "markup_items", self.limits.markup_items
            )

    def text(self, chars: int) -> None:
        self.chars_left -= chars
        if self.chars_left < 0:
            raise refusal(
                f"{self.source}: more text than that", "text_chars", self.limits.text_chars
            )


def html_text(markup: str, budget: Budget, *, page: bool = True) -> str:
    """The text of ``markup``, one paragraph per block element, lines kept where the
    page breaks them (``br``, ``pre``), a table row's cells on one line.

    Scripts, styles and navigation are dropped; on a web ``page`` also asides and the
    page's own header and footer. An EPUB chapter is not a page: its header is the
    chapter title.
    """
    extractor = _Extractor(budget, page=page)
    try:
        extractor.feed(markup)  # whole: fed in parts, an unclosed construct is rescanned
        extractor.close()
    except AssertionError as exc:  # html.parser's way of giving up on a declaration
        raise InputError(f"{budget.source}: cannot parse the HTML ({exc})") from exc
    text = _SPACES.sub(" ", extractor.finish())  # white space in HTML source is not text
    paragraphs = (p.replace(LINE, "\n") for p in text.split(PARAGRAPH))
    lines = ("\n".join(filter(None, (s.strip() for s in p.split("\n")))) for p in paragraphs)
    return "\n\n".join(filter(None, lines))


class _Extractor(HTMLParser):
    """The page's text with PARAGRAPH and LINE markers, built as the parser goes."""

    def __init__(self, budget: Budget, *, page: bool) -> None:
        # Character references are resolved here, as BeautifulSoup did (an unknown
        # entity stays text); convert_charrefs would resolve them differently.
        super().__init__(convert_charrefs=False)
        self.budget, self.page = budget, page
        self.stack: list[str] = []  # names of the open elements, outermost first
        self.open: dict[str, int] = {}  # how many of each name are open
        self.dropped_at = -1  # where on the stack the dropped element is, or -1
        self.not_read = 0  # open elements whose text is not read (_NOT_READ)
        # Void elements closed at their start tag: their end tags, if any come, are
        # skipped (one each).
        self.closed_void: dict[str, int] = {}
        self.pieces: list[str] = []
        self.pending = 0  # characters in pieces
        self.chunks: list[str] = []

    def close(self) -> None:
        # What feed left unparsed starts with a construct never closed (a tag, comment or
        # declaration running to the end of the file): HTML drops it, the file ends inside
        # it. html.parser before Python 3.13.4 would instead rescan the rest from each "<"
        # in it, in time quadratic in its length (80 KB of "<a x='" took 30 s).
        left = getattr(self, "rawdata", "")
        if not getattr(self, "cdata_elem", None) and _UNCLOSED.match(left):
            self.rawdata = ""
        super().close()

    # --- the parser's events ----------------------------------------------------------
    def handle_starttag(self, tag: str, attrs: object) -> None:
        self._start(tag)
        if tag in VOID:
            self._close(tag)
            self.closed_void[tag] = self.closed_void.get(tag, 0) + 1

    def handle_startendtag(self, tag: str, attrs: object) -> None:
        self._start(tag)  # <tag/>: open and closed, whatever the tag
        self._close(tag)

    def handle_endtag(self, tag: str) -> None:
        self.budget.item()
        if self.closed_void.get(tag):
            self.closed_void[tag] -= 1
        elif self.open.get(tag):
            self._close(tag)
        # else a stray end tag: nothing of that name is open

    def handle_data(self, data: str) -> None:
        self.budget.item()
        if not self.not_read:
            self._text(data)

    def handle_entityref(self, name: str) -> None:
        character = html.entities.html5.get(name + ";")
        self.handle_data(character if character is not None else "&" + name)

    def handle_charref(self, name: str) -> None:
        self.handle_data(html.unescape(f"&#{name};"))

    def unknown_decl(self, data: str) -> None:
        self.budget.item()
        if data.upper().startswith("CDATA["):  # a CDATA section is text, even in rt
            self._text(data[len("CDATA[") :])

    def handle_comment(self, data: str) -> None:
        self.budget.item()

    def handle_decl(self, decl: str) -> None:
        self.budget.item()

    def handle_pi(self, data: str) -> None:
        self.budget.item()

    # --- the tree they describe -------------------------------------------------------
    def _start(self, tag: str) -> None:
        self.budget.item()
        depth = len(self.stack)
        self.stack.append(tag)
        self.open[tag] = self.open.get(tag, 0) + 1
        if tag in _NOT_READ:
            self.not_read += 1
        if self.dropped_at >= 0:
            return
        if tag in NOT_TEXT or (self.page and tag in PAGE_CHROME and not self._held(tag)):
            self.dropped_at = depth
        elif tag in BLOCKS:
            self._emit(PARAGRAPH)
        elif tag == "br":
            self._emit(LINE)

    def _held(self, tag: str) -> bool:
        """Whether chrome ``tag`` belongs to an article or section (and stays)."""
        return tag in _HELD_CHROME and any(self.open.get(name) for name in _CHROME_HOLDERS)

    def _close(self, tag: str) -> None:
        """Close the open elements up to the last ``tag`` (open: the caller checked)."""
        while True:
            name = self.stack.pop()
            self.open[name] -= 1
            if name in _NOT_READ:
                self.not_read -= 1
            if self.dropped_at < 0:
                if name in _CELLS:
                    self._emit(" ")  # cells of a row read as one line
                elif name in BLOCKS:
                    self._emit(PARAGRAPH)
            elif len(self.stack) == self.dropped_at:
                self.dropped_at = -1
            if name == tag:
                return

    # --- the text ---------------------------------------------------------------------
    def _text(self, data: str) -> None:
        if self.dropped_at >= 0:
            return
        if self.open.get("pre"):
            data = data.replace("\n", LINE)
        self._emit(data)

    def _emit(self, text: str) -> None:
        if len(text) > self.budget.chars_left:  # one run of text past the bound: no copy
            self.budget.text(len(text))
        self.pieces.append(text)
        self.pending += len(text)
        if len(self.pieces) >= _FLUSH_PIECES or self.pending >= _FLUSH_CHARS:
            self._flush()

    def _flush(self) -> None:
        chunk = _SPACES.sub(" ", "".join(self.pieces))
        self.pieces.clear()
        self.pending = 0
        self.budget.text(len(chunk))
        self.chunks.append(chunk)

    def finish(self) -> str:
        """The text, once the parser is closed: elements still open end here."""
        while self.stack:
            self._close(self.stack[-1])
        self._flush()
        return "".join(self.chunks)
