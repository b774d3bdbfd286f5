"""``cam mcp``: the Model Context Protocol server over one memory, for agents.

An app beside the CLI, over the public ``Memory`` API only (through ``MemoryTools``), as
graphiti keeps its ``mcp_server/`` beside ``graphiti_core/``. ``create_server`` publishes
the tools, each with a JSON schema and a description an agent can act on, and the
memory's top level as a resource, with the official SDK's ``MCPServer`` (mcp 2.x, where
1.x's FastMCP was renamed). Failures come back as MCP tool errors with the engine's
one-line message.
"""

from __future__ import annotations

import json
import logging
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import (
    ResourceError,
    ResourceNotFoundError,
    ToolError,
    UnexpectedToolError,
)
from mcp.types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from cam_engine import __version__
from cam_engine.errors import CamError, NotFoundError
from cam_engine.retrieval.strategies import DEFAULT, STRATEGIES, described
from cam_engine.serve.tools import MemoryTools, describe, one_line

logger = logging.getLogger(__name__)

TOP_URI = "cam://memory/{name}/top"
# A batch's covering level compares its roots pairwise (graph/hierarchy.py): a client's
# batch of 100,000 chunks would be gigabytes of matrices. 1,024 is 16 default batches.
MAX_BATCH_SIZE = 1024


class _Server(MCPServer[Any]):
    """``MCPServer`` whose tool errors read as the engine's one-line message.

    The SDK reports a failed tool as ``Error executing tool NAME: ...``, with pydantic's
    multi-line validation report, or only ``Error executing tool NAME`` for any other
    exception. Here a ``CamError`` comes back as its own message, invalid arguments as
    one line naming each field, and an unexpected exception as its type and message
    (its traceback goes to the server's log, never to the client).
    """

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, CamError):
                message = str(cause)
            elif isinstance(cause, ValidationError):
                message = f"invalid arguments for {name}: {_fields(cause)}"
            elif isinstance(exc, UnexpectedToolError) and cause is not None:
                logger.error("cam mcp: tool %s failed", name, exc_info=cause)
                message = f"{name} failed unexpectedly: {describe(cause)}"
            else:
                message = str(exc)
            return CallToolResult(
                content=[TextContent(type="text", text=one_line(message))], is_error=True
            )


def create_server(tools: MemoryTools) -> MCPServer[Any]:
    """The MCP server publishing ``tools``: eight tools and the top-level resource."""
    top_uri = TOP_URI.format(name=tools.name)
    server = _Server(
        "cam",
        title="CAM Engine memory",
        version=__version__,
        instructions=(
            f"A long-document memory (CAM Engine) named {tools.name!r}: text chunks joined "
            "by similarity, and summaries of overlapping clusters of them, level after "
            "level. Add documents with ingest_text (or ingest_file, for files under the "
            "folders the server may read); the same document id again updates that "
            "document, and delete_document removes one. ask answers a question and returns the "
            "evidence nodes it came from; search lists the nodes closest to a query "
            "without answering; show_node shows one node with its parents, children and "
            f"neighbours; stats and memories describe the memory and its store. {top_uri} "
            "holds the top level's summaries: an overview of everything read."
        ),
    )
    # An ingest under an id the memory holds replaces that document's text: destructive.
    writes = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True)
    deletes = ToolAnnotations(
        read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
    )
    reads = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @server.tool(annotations=writes)
    def ingest_text(
        text: Annotated[str, Field(description="The document's text (plain UTF-8 text).")],
        document: Annotated[
            str,
            Field(
                min_length=1,
                description="Id of the document, e.g. a file name or 'notes-2024-05'. "
                "Evidence names it.",
            ),
        ],
        batch_size: Annotated[
            int, Field(ge=1, le=MAX_BATCH_SIZE, description="Chunks per batch.")
        ] = 64,
    ) -> dict[str, Any]:
        """Add one document, given as text, to the memory.

        The text is cut into chunks of about 200 words, which are embedded and linked,
        and the summaries above them are updated incrementally: only the part of the
        hierarchy the new text touches. Sending the same text under the same id again
        changes nothing; different text under an id the memory already holds updates
        that document: chunks whose text is unchanged are kept, the others removed, the
        new ones added. Returns the ingest report: chunks added, kept and removed,
        summaries written, each document's version and changes (document_changes),
        seconds, and one report per batch.
        """
        return tools.ingest_text(text, document, batch_size=batch_size)

    @server.tool(annotations=writes)
    def ingest_file(
        path: Annotated[
            str,
            Field(
                description="Absolute path of a UTF-8 text file, or of a folder (its files, "
                "hidden ones skipped), on the server's machine."
            ),
        ],
        document: Annotated[
            str | None,
            Field(description="Document id for a single file (default: the file name)."),
        ] = None,
        document_prefix: Annotated[
            str | None,
            Field(
                description="Put before each file's id, joined by '/': with 'notes', a "
                "folder's a.md is document 'notes/a.md' (default: no prefix; a folder's "
                "files are named by their path inside it)."
            ),
        ] = None,
        batch_size: Annotated[
            int, Field(ge=1, le=MAX_BATCH_SIZE, description="Chunks per batch.")
        ] = 64,
        encoding: Annotated[
            str,
            Field(
                description="Encoding of text files, e.g. latin-1 (PDF, EPUB and HTML say "
                "their own)."
            ),
        ] = "utf-8",
    ) -> dict[str, Any]:
        """Add a text file, or every file of a folder, to the memory.

        Only paths under the folders the server was started with (`cam mcp --allow
        FOLDER`) can be read, symlinks resolved; with none, every path is refused: send
        the text with ingest_text instead. Re-ingesting an unchanged file changes
        nothing; a changed one updates its document, as ingest_text does. Returns the
        same report as ingest_text, with any file that could not be read under "errors".
        """
        return tools.ingest_file(
            path,
            document=document,
            document_prefix=document_prefix,
            batch_size=batch_size,
            encoding=encoding,
        )

    @server.tool(annotations=deletes)
    def delete_document(
        document: Annotated[
            str,
            Field(min_length=1, description="Id of the document, as stats lists it."),
        ],
    ) -> dict[str, Any]:
        """Delete one document from the memory: its chunks with their edges, and the
        adapter views of it. Only the summaries above it are redone (those left with one
        member are removed). Returns chunks_removed, summaries_written and
        summaries_removed, seconds, and the batch's report. An id the memory does not
        hold is an error naming the documents it does.
        """
        return tools.delete_document(document)

    @server.tool()
    def ask(
        question: Annotated[str, Field(description="The question, in plain words.")],
        strategy: Annotated[
            str,
            Field(
                # Read from the registry as the server is made: a strategy added
                # to it is offered here with nothing else to edit.
                description=f"How evidence is found (default {DEFAULT}). {described()}",
                json_schema_extra={"enum": list(STRATEGIES)},
            ),
        ] = DEFAULT,
        top_k: Annotated[
            int,
            Field(
                ge=1,
                le=1000,
                description="Budget: nodes offered by the first search (prune-grow, global), "
                "children kept per level (traverse), or chunks returned (hybrid, dense, bm25).",
            ),
        ] = 10,
        max_turns: Annotated[
            int, Field(ge=1, le=100, description="Budget: prune-grow's search turns at most.")
        ] = 5,
        documents: Annotated[
            list[str] | None,
            Field(
                description="Keep the question to these documents (ids as stats lists "
                "them): only their chunks, and summaries of one of them alone, are "
                "searched and returned. Omitted or empty: the whole memory."
            ),
        ] = None,
    ) -> dict[str, Any]:
        """Answer a question from the memory, with the evidence it came from.

        Returns "answer", "backend" (who wrote it: "extractive", the default, quotes the
        evidence sentences that best match the question; an LLM backend writes it) and
        "evidence": the nodes used, most relevant chunks first, then summaries, each with
        node_id (for show_node), level (0: a chunk of text), document, position, text and
        its citation: start_char and end_char (the text is the document's text from
        start_char to end_char), pages (PDF), covers (a summary: document -> the span of
        its chunks there) and citation, all of it in one line ("pg84.txt:120-980").
        Also the strategy, its turns and why it stopped, and the LLM calls and tokens.
        """
        return tools.ask(
            question, strategy=strategy, top_k=top_k, max_turns=max_turns, documents=documents
        )

    @server.tool(annotations=reads)
    def search(
        query: Annotated[str, Field(description="What to look for, in plain words.")],
        top_k: Annotated[int, Field(ge=1, le=1000, description="Nodes to return.")] = 10,
    ) -> dict[str, Any]:
        """The memory's nodes closest in meaning to a query, best first, without answering.

        Chunks (level 0) and summaries (level 1 and up) alike, each with its id, level,
        document, position, cosine similarity score and text.
        """
        return tools.search(query, top_k=top_k)

    @server.tool(annotations=reads)
    def show_node(
        node_id: Annotated[
            str, Field(description="A node id from ask, search or the top-level resource.")
        ],
    ) -> dict[str, Any]:
        """One node of the memory: its text, level, kind, document and position, the ids
        of its parents (summaries it belongs to), children (its members) and neighbours
        (with edge weights), and its cluster labels. Walk the hierarchy with it."""
        return tools.show_node(node_id)

    @server.tool(annotations=reads)
    def stats() -> dict[str, Any]:
        """The memory's figures: documents, nodes, edges and clusters per level, overlap,
        summaries by backend, views, settings and the embedding model."""
        return tools.stats()

    @server.tool(annotations=reads)
    def memories() -> dict[str, Any]:
        """The names of the memories in this server's store, and the one it serves."""
        return tools.memories()

    def top_of(name: str) -> str:
        try:
            return json.dumps(tools.top(name))
        except NotFoundError as exc:
            raise ResourceNotFoundError(str(exc)) from exc
        except CamError as exc:
            raise ResourceError(str(exc)) from exc

    description = (
        "The top level of the memory: ids and texts of its summaries (its chunks while "
        "there are none), an overview from which every chunk is reachable."
    )
    server.resource(
        top_uri,
        name=f"{tools.name}-top",
        title=f"Top level of memory {tools.name!r}",
        description=description,
        mime_type="application/json",
    )(lambda: top_of(tools.name))
    server.resource(
        TOP_URI,
        name="memory-top",
        title="Top level of a memory",
        description=description,
        mime_type="application/json",
    )(top_of)
    return server


def _fields(error: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(part) for part in e['loc']) or 'arguments'}: {e['msg']}"
        for e in error.errors()
    )
