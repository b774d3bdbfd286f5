"""Public-domain texts shipped with the package, so a new user's first ingest needs no
file of their own (``cam ingest --sample``).

``frankenstein.txt`` is Project Gutenberg eBook #84, *Frankenstein; Or, The Modern
Prometheus* by Mary Wollstonecraft Shelley, unchanged, with the Project Gutenberg
licence it carries (the reader cuts the header and licence away when ingesting).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

SAMPLES = {"frankenstein": "frankenstein.txt"}
DEFAULT_SAMPLE = "frankenstein"


def sample_path(name: str = DEFAULT_SAMPLE) -> Path:
    """The installed file of sample ``name``; its file name is its document id."""
    try:
        file_name = SAMPLES[name]
    except KeyError:
        from cam_engine.errors import ConfigError

        raise ConfigError(f"no sample {name!r}: the samples are {', '.join(SAMPLES)}") from None
    return Path(str(resources.files(__name__).joinpath(file_name)))
