"""Moving a memory between stores: ``cam export`` writes one memory to a portable file,
``cam import`` reads it into any store (docs/storage.md, "Moving a memory").

The file is JSON Lines, gzip-compressed when its name ends in ``.gz``. Its first line is
a header: the format's name and version, the memory's name and settings, the size of
its vectors and its embedder, and how many records of each kind follow. Then the
records, one per line, kind after kind in the order an import writes them (each kind
refers only to kinds before it): documents, nodes (every level; a chunk lists the name
keys it mentions, the name graph), edges, replicas, members (each summary's), view
nodes (the adapters' pages, memos and memory states) and counters. A vector is the
base64 of its float32 values, little-endian.

Both directions stream: the memory is read page by page and the file line by line,
so memory use does not grow with the memory. An import writes in transactions of at
most ``BATCH_RECORDS`` records (or ``BATCH_CHARS`` characters of them), writes the
memory's settings last (until then no command sees a memory of that name), and on any
failure, a malformed line or Ctrl-C, removes what it wrote.
"""

from cam_engine.transfer.export import export_memory
from cam_engine.transfer.importer import import_memory
from cam_engine.transfer.reader import ExportFile
from cam_engine.transfer.records import FORMAT, KINDS, VERSION, Header, TransferReport

__all__ = [
    "FORMAT",
    "KINDS",
    "VERSION",
    "ExportFile",
    "Header",
    "TransferReport",
    "export_memory",
    "import_memory",
]
