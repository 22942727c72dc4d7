"""The analysis layer (rank 3; the cost model and fusion pricing too). Analyses shared by the passes: aliasing and mutation, memory layout.

* `alias_facts` -- what torch says an fx call does to storage: run on
  fake tensors (cached per target, literals and operand types) and the
  aten schemas' alias annotations; the one source of aliasing facts;
* `op_classes` -- the op-class predicates everything below is built on
  (`is_view_op`, `has_contiguous_result`, `is_elementwise_op`,
  `may_alias_operands`, `may_write_operands`, ...), in one place;
* `aliasing` -- alias classes, mutation, graph inputs and outputs: walking
  queries, and `AliasAnalysis`, computed once per pass run and kept up to
  date by a rewriter listener;
* `layout` -- strides a value provably has (`strides_of`, `same_layout`,
  `known_contiguous`, `layout_insensitive`);
* `forwarding` -- `can_forward_as_alias` and `can_replace_by_copy`, the
  preconditions of turning a copy into a view (or a cheaper copy);
* `live_bytes` -- the tensor bytes a call holds at each op and their peak
  (`live_bytes`), statically: batch fusion's memory budget.
* `graph_walk` -- `reachable`, the one depth-first walk the queries above
  (alias class, view closure, alias roots) are phrased in.
"""

from optimus_ir.analysis.aliasing import (
    AliasAnalysis,
    alias_class,
    alias_roots,
    class_is_mutated,
    direct_views,
    forwarding_returns_another_object,
    is_graph_input,
    is_graph_input_view,
    is_returned,
    is_view_result,
    may_be_mutated,
    reaches_output,
    stride_sensitive,
    view_closure,
)
from optimus_ir.analysis.forwarding import (
    can_forward_as_alias,
    can_replace_by_copy,
    fresh_reaches_output,
)
from optimus_ir.analysis.layout import (
    all_static,
    contiguous_part,
    contiguous_strides,
    is_row_major,
    known_contiguous,
    layout_insensitive,
    leading_ones,
    provably_row_major,
    same_layout,
    shape,
    strides_of,
    view_strides,
)
from optimus_ir.analysis.live_bytes import (
    DEFAULT_SYMBOLIC_SIZE,
    LiveBytes,
    allocated_bytes,
    live_bytes,
    tensor_bytes,
    tensor_elements,
)
from optimus_ir.analysis.live_bytes import __all__ as _LIVE_BYTES_NAMES
from optimus_ir.analysis.op_classes import (
    CONTIGUOUS_RESULT_OPS,
    NON_MUTATING_MODULE_TYPES,
    NON_MUTATING_TARGETS,
    STRIDE_SENSITIVE_NAMES,
    TORCH_VIEW_OPS,
    has_contiguous_result,
    is_elementwise_op,
    is_fx_node,
    is_join_op,
    is_layout_exact_elementwise,
    is_stride_sensitive_op,
    is_view_op,
    may_alias_operands,
    may_return_operand,
    may_write_operands,
    result_is_fresh,
    target_name,
    written_operands,
)
from optimus_ir.analysis.op_classes import __all__ as _OP_CLASSES_NAMES

__all__ = [
    *_LIVE_BYTES_NAMES,
    *_OP_CLASSES_NAMES,
    "AliasAnalysis",
    "alias_class",
    "alias_roots",
    "all_static",
    "can_forward_as_alias",
    "can_replace_by_copy",
    "class_is_mutated",
    "contiguous_part",
    "contiguous_strides",
    "direct_views",
    "forwarding_returns_another_object",
    "fresh_reaches_output",
    "is_graph_input",
    "is_graph_input_view",
    "is_view_result",
    "is_row_major",
    "known_contiguous",
    "provably_row_major",
    "layout_insensitive",
    "leading_ones",
    "may_be_mutated",
    "is_returned",
    "reaches_output",
    "same_layout",
    "shape",
    "stride_sensitive",
    "strides_of",
    "view_closure",
    "view_strides",
]
