"""The dialects layer (rank 1; `optimus_ir.dialects`): the fx, torch, batch
and literal encodings of the IR (`literals`: Python values as fx-dialect
attributes)."""
