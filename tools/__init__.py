"""The tools layer (rank 8; `optimus_ir.tools`): the command-line tools
(`optimus-opt`, `optimus-translate`) and the layer check."""
