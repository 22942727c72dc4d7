"""Triton kernels for the batch dialect's ops, registered as torch custom
ops (`torch.ops.optimus.*`) with a Triton implementation for CUDA tensors
and a torch reference implementation for every other device."""
