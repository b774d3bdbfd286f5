"""The ``cam`` command line (installed as ``cam_engine.cli``); it uses only the public API."""
