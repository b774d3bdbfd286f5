"""``python -m cam_engine.cli ...`` runs the ``cam`` command (as MCP client configs may)."""

from cam_engine.cli.main import cli

if __name__ == "__main__":
    cli(prog_name="cam")
