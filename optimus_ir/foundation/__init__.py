"""The foundation layer (rank 0): facts and machinery every layer shares.

Names no dialect and imports nothing else of the project:

* `environment` -- the environment variables optimus-ir reads and the
  literal option types (`KernelChoice`, `CostModelChoice`, ...);
* `types` -- tensor types (shape, dtype, device) and their cached attributes;
* `diagnostics` -- `OptimusError`, remarks, source locations, the warnings;
* `statistics` -- per-pass counters and timing (`-mlir-pass-statistics`);
* `rewriting` -- the greedy rewrite driver;
* `effects` -- side effects and in-place writes of ops;
* `traits` -- op traits (pure, elementwise, broadcastable, ...);
* `objects` -- the table of Python objects a graph refers to.

The layer contract: `tools/check_layers.py` (`make check-layers`).
"""
