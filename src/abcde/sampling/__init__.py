"""Weighted sampling: reproducible exponential clocks, the importance sample of affected items
(exploration, with its filters) and pair sampling ∝ u_ij without listing pairs."""
