"""The lowering layer (rank 4, a sibling of `passes`; `optimus_ir.lowering`):
the batch dialect lowered to torch ops and Triton kernels."""
