"""Canonicalization patterns, one module per dialect (`torch`), referenced
lazily by the ops' `LazyCanonicalizationPatterns` traits and run by the
`canonicalize` pass."""
