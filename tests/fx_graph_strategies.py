"""Hypothesis strategies that generate valid torch.fx programs, and the
differential check every generated program must pass.

This module is the entry point (tests import from it, and the source of a
drawn program calls `fx_graph_strategies.<helper>`); it re-exports every
public name of the modules that hold them:

=============================  ==============================================
`fx_graph_values`              seeded tensors, parameters and modules, the
                               unknown functions, the dtypes drawn
`fx_graph_check`               `FxProgram`, `assert_optimized_matches`,
                               `pipeline_changed`
`fx_graph_builder`             `Builder` (nodes added one by one, executed
                               while built), `Val`
`fx_graph_op_strategies`       the op generators, `OPS`, `fx_programs()`
`fx_graph_fusion_strategies`   `fusion_programs()`, `KNOWN_BUG_FEATURES`,
                               `feature_enabled`
=============================  ==============================================

`fx_programs()` draws an `FxProgram`: a GraphModule built node by node with
`torch.fx.Graph` (no tracing), its owner's seeded parameters and buffers
(`get_attr` nodes, `nn.Linear`/`nn.LayerNorm` `call_module` nodes), seeded
example inputs, and whether the graph only moves data (then the optimized
module must give bit-identical outputs; otherwise the dtype tolerances of
`optimus_ir.pipeline.validation.tolerance_for`).

Every op is executed eagerly on build-time copies while the graph is built,
so the generated program is valid by construction: a draw torch rejects
(a view of a non-contiguous tensor, an in-place write to a multi-output
view that requires grad, a dtype an op does not support on this CPU) is
dropped from the graph instead of being rejected.

The drawn program's `repr` is Python source that rebuilds it with
`torch.fx.Graph` calls and the helpers re-exported here (`tensor`,
`parameter`, `linear_module`, `layer_norm_module`, `input_tensor`):
hypothesis prints it for the shrunk failing example, ready to be pasted
into `tests/test_fuzz_regressions.py`.

The graphs are shaped to make the passes fire: groups of sibling ops
(linear, layer_norm, pointwise) over the pieces of one split (batch
fusion), split -> cat/stack chains, nested splits and view chains
(split-cat-simplify), in-place writes between them (the barriers).

`fusion_programs()` draws fusion-rich programs (issue 19): N parallel
members through levels of the same op per member, with the cases batch
fusion must keep apart or get right (ragged widths, int vs float scalars,
+-0.0 clamp bounds, nan/inf/-0.0 inputs, transposed and stride-0 inputs,
shared weights, in-place writes). Its features that hit known, unfixed bugs
are off while named in `KNOWN_BUG_FEATURES`.
"""

from __future__ import annotations

from fx_graph_builder import Builder, Val
from fx_graph_check import FxProgram, assert_optimized_matches, pipeline_changed, run_reference
from fx_graph_fusion_strategies import KNOWN_BUG_FEATURES, RAGGED_WIDTHS, feature_enabled, fusion_programs
from fx_graph_op_strategies import (
    DATA_MOVEMENT_OPS,
    OPS,
    DrawFn,
    fx_programs,
    op_binary,
    op_inplace,
    op_join,
    op_layer_norm,
    op_linear,
    op_reduce,
    op_split,
    op_unary,
    op_unbind,
    op_unknown,
    op_view,
)
from fx_graph_values import (
    FLOAT_DTYPES,
    INT_DTYPES,
    fuzz_helper,
    fuzz_scale_,
    input_tensor,
    layer_norm_module,
    linear_module,
    parameter,
    tensor,
)

__all__ = [
    "DATA_MOVEMENT_OPS",
    "FLOAT_DTYPES",
    "INT_DTYPES",
    "KNOWN_BUG_FEATURES",
    "OPS",
    "RAGGED_WIDTHS",
    "Builder",
    "DrawFn",
    "FxProgram",
    "Val",
    "assert_optimized_matches",
    "feature_enabled",
    "fusion_programs",
    "fuzz_helper",
    "fuzz_scale_",
    "fx_programs",
    "input_tensor",
    "layer_norm_module",
    "linear_module",
    "op_binary",
    "op_inplace",
    "op_join",
    "op_layer_norm",
    "op_linear",
    "op_reduce",
    "op_split",
    "op_unary",
    "op_unbind",
    "op_unknown",
    "op_view",
    "parameter",
    "pipeline_changed",
    "run_reference",
    "tensor",
]
