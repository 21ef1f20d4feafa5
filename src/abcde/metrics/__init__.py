"""Exact metrics: impact (SplitRate, MergeRate, JaccardDistance), pointwise metrics against a
ground truth (and the population's, estimated from a truth of sampled complete entities:
:mod:`abcde.metrics.truth_sample`), and item weights from past importance."""
