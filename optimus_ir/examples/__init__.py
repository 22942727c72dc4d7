"""The examples layer (rank 9): the example models, installed with optimus-ir so that they run anywhere.

* `recsys`: the synthetic recommendation model (parallel towers over the
  split pieces of one feature vector; variants in `recsys.VARIANTS`),
  `make_recsys_model(num_towers=..., batch=...) -> (model, inputs)`;
* `dlrm`, `mmoe`, `wide_deep`: a DLRM-style model, multi-task ranking with
  parallel experts, wide and deep (`make_dlrm_model`, `make_mmoe_model`,
  `make_wide_deep_model`);
* `plumbing`: a small model full of split/cat plumbing (`make_model`), the
  source of `examples/plumbing.mlir` in the repository;
* `demo`: what `make demo` runs, `python -m optimus_ir.examples.demo --help`;
* `timing`: the interleaved per-call timing the demo and the benchmarks share;
* `builders`: what the model factories share: `mlp` (the ``Linear -> ReLU``
  stacks of every model) and `seeded_example` (the seeded model and inputs).

Each factory returns `(model, example_inputs)`, seeded (the caller's random
numbers stay as they were), nothing downloaded:

    from optimus_ir.examples.recsys import make_recsys_model
    model, inputs = make_recsys_model(num_towers=8, batch=16)

Nothing in the compiler imports this package (docs/architecture.md, "Layers":
it is the top layer, next to the tools).
"""
