"""The vocabulary an op declaration of the torch and batch dialects is built
from: xDSL's IRDL field definitions, the traits most ops carry, the op base
(`TorchOp`) with its declaration helpers, and the facts an op declares.

Every name this module imports is the vocabulary. Each module that
declares ops imports it whole::

    from optimus_ir.dialects.torch.declaration import *  # noqa: F403

so that its own imports name only what is particular to it (its relations,
its type inference, its private helpers), and a name every declaration
uses is imported in one place.
"""

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute
from xdsl.irdl import (
    AttrSizedOperandSegments,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import Pure

from optimus_ir.dialects.torch.assembly import TorchOp, declare_op, ops_defined_in
from optimus_ir.dialects.torch.base import Format, Value
from optimus_ir.dialects.torch.facts import Argument, OpFacts, Spellings
from optimus_ir.foundation.traits import ContiguousResult
