"""Exact metrics: impact (SplitRate, MergeRate, JaccardDistance), pointwise metrics against a
ground truth, and item weights from past importance."""
