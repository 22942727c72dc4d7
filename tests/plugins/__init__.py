"""Pass plugins of the tests (loaded explicitly; see miscompile_passes.py)."""
