"""``python -m cam_engine.bench ingest ...`` runs the same commands as ``cam bench``."""

from cam_engine.cli.bench import bench

if __name__ == "__main__":
    bench(prog_name="python -m cam_engine.bench")
