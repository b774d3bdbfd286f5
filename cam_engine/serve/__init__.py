"""Serving a memory to other programs: ``cam mcp`` (``mcp.py``, the MCP server) over
``tools.py`` (the tools' work, without the SDK)."""
