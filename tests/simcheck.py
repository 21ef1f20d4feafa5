"""Statistical bands for estimator simulations, with their false-alarm rate and power stated.

A simulation holds, per metric, one (estimate, standard error, interval half-width in SEs)
per seed. :func:`check` makes three assertions per metric and splits the family's false-alarm
rate ``alpha`` (default 1/1000 for a whole test) over all of them (Bonferroni):

* **mean**: ``|mean − truth| ≤ t_{1−a/2, S−1} · sd / √S`` — the estimator is unbiased;
* **SE**: ``|ln(mean SE / sd)| ≤ z_{1−a/2} · √((κ_excess + 2) / (4(S − 1)) + CV²(SE) / S)`` —
  the reported standard error is the spread (the variance of ``ln sd`` of S draws is
  ``(κ − 1)/(4(S − 1))``, κ the kurtosis, measured; plus the noise of the mean SE);
* **coverage**: ``|coverage − 0.95| ≤ z_{1−a/2} · √(0.95 · 0.05 / S)`` (binomial).

Here ``a = alpha / (3 · metrics)``. :func:`power` gives, per metric, the probability that the
mean band fails when the estimator is off by ``rel`` (5%) of the truth:
``Φ(rel · |truth| / (sd/√S) − t)``. The truths never come from abcde: the callers compute them
by brute force from ``tests/reference.py``'s pair listing.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

ALPHA = 1e-3  # chance that a correct estimator fails one whole test
COVERAGE = 0.95
ZERO = 1e-12  # a truth this small is 0 (a null check: no multiplicative bias to detect)


def new_results(metrics) -> dict:
    return {m: [] for m in metrics}


def add(res: dict, metric: str, value: float, se: float, half_width: float, low: float | None = None,
        high: float | None = None) -> None:
    """One seed's estimate, its SE and its 95% interval: its half-width (in the estimate's units),
    and its ends when it is not centred on the estimate (e.g. Agresti–Coull's)."""
    lo = float(value) - float(half_width) if low is None else float(low)
    hi = float(value) + float(half_width) if high is None else float(high)
    res[metric].append((float(value), float(se), float(half_width) / float(se) if se else math.nan, lo, hi))


def add_estimate(res: dict, metric: str, est: dict) -> None:
    """From an ``Estimate.to_dict()`` (estimate, std_err, ci_low, ci_high)."""
    add(res, metric, est["estimate"], est["std_err"], (est["ci_high"] - est["ci_low"]) / 2, est["ci_low"],
        est["ci_high"])


def arrays(res: dict, metric: str):
    """Per seed: estimates, SEs and interval half-widths in SEs."""
    a = np.asarray(res[metric], dtype=float)
    return a[:, 0], a[:, 1], a[:, 2]


def bounds(res: dict, metric: str):
    """Per seed: the interval's ends."""
    a = np.asarray(res[metric], dtype=float)
    return a[:, 3], a[:, 4]


def limits(n_metrics: int, seeds: int, alpha: float = ALPHA) -> tuple[float, float]:
    """(t limit of the mean band, z limit of the SE and coverage bands) for ``n_metrics``."""
    a = alpha / (3 * n_metrics)
    return float(stats.t.isf(a / 2, seeds - 1)), float(stats.norm.isf(a / 2))


def table(res: dict, truth: dict, alpha: float = ALPHA) -> list[dict]:
    """Per metric: the three statistics, their limits and whether they pass."""
    rows = []
    seeds = len(next(iter(res.values())))
    t_lim, z_lim = limits(len(truth), seeds, alpha)
    for m, true in truth.items():
        v, se, q = arrays(res, m)
        s = len(v)
        assert s == seeds and np.isfinite(v).all() and np.isfinite(se).all(), (m, "undefined estimates")
        sd = float(v.std(ddof=1))
        sem = sd / math.sqrt(s)
        z_mean = (float(v.mean()) - true) / sem if sem > 0 else (0.0 if v.mean() == true else math.inf)
        kurt = float(stats.kurtosis(v)) if sd > 0 else 0.0
        var_log = (kurt + 2) / (4 * (s - 1)) + float(se.var(ddof=1)) / (s * float(se.mean()) ** 2)
        se_ratio = float(se.mean()) / sd if sd > 0 else math.nan
        z_se = math.log(se_ratio) / math.sqrt(var_log) if sd > 0 else math.nan
        lo, hi = bounds(res, m)
        cover = float(np.mean((lo <= true) & (true <= hi)))
        z_cov = (cover - COVERAGE) / math.sqrt(COVERAGE * (1 - COVERAGE) / s)
        shift = 0.05 * abs(true) / sem if sem > 0 else math.inf
        rows.append({
            "metric": m, "truth": true, "mean": float(v.mean()), "sd": sd, "sem": sem, "z_mean": z_mean,
            "se_ratio": se_ratio, "z_se": z_se, "coverage": cover, "z_cov": z_cov, "t_lim": t_lim, "z_lim": z_lim,
            "shift5": shift, "power5": float(stats.norm.cdf(shift - t_lim)) if abs(true) > ZERO else math.nan,
            "fails": [name for name, z, lim in (("mean", z_mean, t_lim), ("se", z_se, z_lim), ("coverage", z_cov, z_lim))
                      if not abs(z) <= lim],
        })
    return rows


def failures(res: dict, truth: dict, alpha: float = ALPHA) -> dict:
    """``{metric: [failed bands]}`` (empty: every band holds)."""
    return {r["metric"]: r["fails"] for r in table(res, truth, alpha) if r["fails"]}


def describe(rows: list[dict]) -> str:
    head = f"{'metric':28s} {'truth':>10s} {'mean':>10s} {'sd':>9s} {'z_mean':>7s} {'SE/sd':>6s} {'z_se':>6s} " \
           f"{'cover':>6s} {'z_cov':>6s} {'5%→SEs':>7s} {'power':>6s}"
    lines = [head]
    for r in rows:
        lines.append(f"{r['metric']:28s} {r['truth']:10.5f} {r['mean']:10.5f} {r['sd']:9.5f} {r['z_mean']:7.2f} "
                     f"{r['se_ratio']:6.3f} {r['z_se']:6.2f} {r['coverage']:6.3f} {r['z_cov']:6.2f} "
                     f"{r['shift5']:7.2f} {r['power5']:6.3f} {' '.join(r['fails'])}")
    lines.append(f"limits: |z_mean| ≤ {rows[0]['t_lim']:.2f} (t), |z_se|, |z_cov| ≤ {rows[0]['z_lim']:.2f}")
    return "\n".join(lines)


def assert_bands(res: dict, truth: dict, alpha: float = ALPHA) -> list[dict]:
    """Every band of every metric holds (family false-alarm rate ``alpha``); returns the table."""
    rows = table(res, truth, alpha)
    assert not any(r["fails"] for r in rows), "\n" + describe(rows)
    return rows


def scaled(res: dict, metric: str, factor: float) -> dict:
    """The results with one metric's estimates and SEs multiplied by ``factor`` (a 5% bias)."""
    out = dict(res)
    out[metric] = [(v * factor, se * factor, q, lo * factor, hi * factor) for v, se, q, lo, hi in res[metric]]
    return out
