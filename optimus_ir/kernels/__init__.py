"""The kernels layer (rank 2, the runtime: what an exported graph calls at run time). Triton kernels for the batch dialect's ops, registered as torch custom
ops (`torch.ops.optimus.*`) with a Triton implementation for CUDA tensors
and a torch reference implementation for every other device."""
