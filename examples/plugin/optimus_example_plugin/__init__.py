"""An optimus-ir plugin package (an example to copy).

Installed, it is found through the `optimus_ir.plugins` entry point (see
`pyproject.toml`); `optimize()`, `torch.compile(backend="optimus")`, the
Inductor hook and `optimus-opt` import it once, which registers:

* the pass `fold-idempotent-activations` (`passes.py`): `relu(relu(x))` ->
  `relu(x)`, a pattern pass written against the IR;
* the replacement `swish-to-silu` (`replacements.py`): `sigmoid(x) * x` -> `F.silu(x)`, written as two torch
  functions. They run in the default pipeline's `user-replacements` stage.

Not installed, `optimus-opt --load-pass-plugin=optimus_example_plugin` (or
`import optimus_example_plugin`) loads it the same way.
"""

from optimus_example_plugin import passes, replacements  # noqa: F401  (importing registers them)

__all__ = ["passes", "replacements"]
