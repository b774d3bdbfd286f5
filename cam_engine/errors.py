"""One root for every error the engine raises, so callers can catch ``CamError``."""

from __future__ import annotations


class CamError(Exception):
    """Base of all CAM Engine errors. The message is one line a user can act on."""


class ConfigError(CamError):
    """A setting is missing or outside its valid range."""


class InputError(CamError):
    """An input document cannot be read (empty, binary, not UTF-8, missing)."""

    def __init__(self, message: str, source: str = "") -> None:
        super().__init__(message)
        self.source = source  # the path or "-" it is about, when known


class NotFoundError(CamError):
    """A store or memory that a read asked for does not exist (nothing is created)."""


class StoreError(CamError):
    """The memory store failed or holds something unexpected."""


class StoreUnavailableError(StoreError):
    """The store's server could not be reached or went away (Neo4j): nothing is wrong
    with the memory, and the same work can be run again once the server is back."""


class StoreWriteError(StoreError):
    """The store refused a write (a full disk, a file size limit, an I/O error, a file
    made read-only): the transaction in flight was rolled back, and what earlier ones
    committed is intact, so the same work can be run again once the cause is gone."""


class EmbeddingError(CamError):
    """The embedder could not be loaded or failed to embed."""


class LLMError(CamError):
    """An LLM backend failed for good (after any retries)."""


class PromptError(CamError):
    """A prompt file is missing, malformed, or was rendered without its inputs."""


class MissingExtraError(CamError):
    """A feature needs a package of an optional extra that is not installed (the Neo4j
    store, ``cam eval``'s plots and ROUGE): the line names the extra to install."""
