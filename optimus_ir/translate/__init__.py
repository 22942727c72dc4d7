"""The translate layer (rank 5): FX <-> IR, the dialect context, textual IR.

* `importer` -- an FX `GraphModule` into the fx/torch dialects;
* `exporter` -- the IR back into an FX `GraphModule`;
* `calling` -- how an exported graph calls the module's attributes and ops;
* `context` -- the xDSL `Context` with every dialect loaded;
* `parsing` -- textual IR in and out (tests and `optimus-opt` only);
* `model_state` -- the state of a captured model (assignments, capture errors).

No pass depends on these modules; the pipeline and the API do.
The layer contract: `tools/check_layers.py` (`make check-layers`).
"""
