"""The fixed list of mutants for ``tests/mutation/run.py`` (issue 17, item 2).

Each mutant is one small, plausible bug in ``src/abcde/``: an exact source snippet that
must occur exactly once in its file (``run.py`` refuses to run a mutant whose snippet is
missing or ambiguous, so this list cannot rot silently), its replacement, a one-line
description, and the tests that should kill it.

``tests`` name test *files* (run in the order given, with ``-x``: put the file most likely
to kill the mutant first), so new tests added to those files are used automatically.
Files that do not exist yet (``test_stored_exact.py``, ``test_estimator_power.py``,
being written for issue 17) are skipped with a note until they appear. ``k`` is an
optional ``pytest -k`` expression (none is used today: a ``-k`` would leave out the
tests written later).

Most mutants scale one quantity by 1.05 (a 5% bias, which issue 17 asks the suite to
catch), a few drop a step (the unsure reweighting) or perturb a sampler's probabilities.
No mutant is meant to be equivalent: each changes an estimate, a stored exact quantity or
a sampling distribution the tests could observe.
"""

from __future__ import annotations

from dataclasses import dataclass

# Test files (paths relative to the repository root).
QUALITY = "tests/test_quality.py"
STRATIFIED = "tests/test_stratified.py"
EXPLORE = "tests/test_explore.py"
SAMPLING = "tests/test_sampling.py"
REFERENCE = "tests/test_impact_reference.py"
# Being written for issue 17 (skipped with a note while they do not exist):
EXACT = "tests/test_stored_exact.py"  # every stored exact quantity against tests/reference.py
POWER = "tests/test_estimator_power.py"  # simulations with the power to catch a 5% bias
FORMULAS = "tests/test_estimator_formulas.py"  # each estimate and SE against the paper's formulas, at 1e-12
SCALE = "tests/test_scale_paths.py"  # the ways of joining large inputs against the one hash join
INTERVALS = "tests/test_intervals.py"  # each interval's formula at 1e-12; no interval leaves its range
VERDICT = "tests/test_verdict.py"  # the answer in words, table-driven
# Issue 38:
INSIDE = "tests/test_inside_interval.py"  # every estimate inside its interval, all judgements agreeing
PINNED = "tests/test_pinned_38.py"  # code the tests did not pin (section 6)
PPI = "tests/test_ppi.py"  # prediction-powered estimates (model + people)
# Issue 51:
PINNED51 = "tests/test_pinned_51.py"  # code the tests did not pin ("Code the tests do not pin")


@dataclass(frozen=True)
class Mutant:
    id: str
    file: str  # relative to src/abcde/
    find: str  # exact snippet; must occur exactly once in the file
    replace: str
    description: str
    tests: tuple[str, ...]  # test files, in the order they run (-x stops at the first failure)
    k: str | None = None  # optional pytest -k expression


M = Mutant

MUTANTS: list[Mutant] = [
    # ------------------------------------------------------------------ sampling/cells.py: pair totals
    M("totals-split", "sampling/cells.py",
      'out = {"split": s["split"] / W,',
      'out = {"split": s["split"] / W * 1.05,',
      "pair_totals: the split total U_split x1.05",
      (EXACT, QUALITY, STRATIFIED)),
    M("totals-merge", "sampling/cells.py",
      '"merge": s["merge"] / W,',
      '"merge": s["merge"] / W * 1.05,',
      "pair_totals: the merge total U_merge x1.05",
      (EXACT, QUALITY, STRATIFIED)),
    M("totals-stable", "sampling/cells.py",
      '"stable": s["stable"] / W,',
      '"stable": s["stable"] / W * 1.05,',
      "pair_totals: the stable total (self pairs included) x1.05",
      (EXACT, QUALITY, STRATIFIED)),
    M("totals-self", "sampling/cells.py",
      '"self": s["self_"] / W}',
      '"self": s["self_"] / W * 1.05}',
      "pair_totals: the self pairs' total x1.05",
      (EXACT, QUALITY, STRATIFIED)),
    M("totals-intersection", "sampling/cells.py",
      'out["intersection+"] = max(s["within_up"], 0.0) / W',
      'out["intersection+"] = max(s["within_up"], 0.0) / W * 1.05',
      "pair_totals: the intersection+ total U_intersection+ x1.05",
      (EXACT, STRATIFIED, QUALITY)),

    # ------------------------------------------------------------------ core/formulas.py: pair weights
    # The per-item metrics call the same functions without w_i; these mutants change only
    # the pair weights (w_i given), not SplitRate/MergeRate.
    M("formula-split-pair-weight", "core/formulas.py",
      "return ibis.ifelse(f.n == f.nb, 0.0, _times(w_i, f.wb - f.w) / f.wb)",
      "return ibis.ifelse(f.n == f.nb, 0.0, _times(w_i, f.wb - f.w) / f.wb * (1.0 if w_i is None else 1.05))",
      "split_pair_weight: u_ij of split pairs x1.05 (SplitRate unchanged)",
      (EXACT, QUALITY, STRATIFIED)),
    M("formula-merge-pair-weight", "core/formulas.py",
      "return ibis.ifelse(f.n == f.ne, 0.0, _times(w_i, f.we - f.w) / f.we)",
      "return ibis.ifelse(f.n == f.ne, 0.0, _times(w_i, f.we - f.w) / f.we * (1.0 if w_i is None else 1.05))",
      "merge_pair_weight: u_ij of merge pairs x1.05 (MergeRate unchanged)",
      (EXACT, QUALITY, STRATIFIED)),
    M("formula-stable-pair-weight", "core/formulas.py",
      "return _times(w_i, d if signed else d.abs()) * w_j / (f.wb * f.we)",
      "return _times(w_i, d if signed else d.abs()) * w_j / (f.wb * f.we) * 1.05",
      "stable_pair_weight: u_ij of stable pairs (and the self term) x1.05",
      (EXACT, QUALITY, STRATIFIED)),

    # ------------------------------------------------------------------ core/formulas.py: the SE formula
    M("se-factor", "quality/result.py",
      "return mean, math.sqrt(var * sw2 / denom)",
      "return mean, math.sqrt(var * sw2 / denom) * 1.05",
      "weighted_mean_se: the standard error x1.05",
      (QUALITY, POWER)),
    M("se-no-correction", "quality/result.py",
      "denom = sw * sw - sw2",
      "denom = sw * sw",
      "weighted_mean_se: (Σw)² instead of (Σw)² − Σw² (the n−1 correction dropped)",
      (QUALITY, POWER)),

    # ------------------------------------------------------------------ impact metrics (core/formulas.py, metrics/)
    M("metric-split-rate", "core/formulas.py",
      "split_rate=split_pair_weight(f),",
      "split_rate=split_pair_weight(f) * 1.05,",
      "SplitRate(i) per item x1.05",
      (EXACT, REFERENCE)),
    M("metric-merge-rate", "core/formulas.py",
      "merge_rate=merge_pair_weight(f),",
      "merge_rate=merge_pair_weight(f) * 1.05,",
      "MergeRate(i) per item x1.05",
      (EXACT, REFERENCE)),
    M("metric-jaccard", "core/formulas.py",
      "jd = ibis.ifelse(aff, (f.wb - f.w + f.we - f.w) / (f.wb + f.we - f.w), 0.0)",
      "jd = ibis.ifelse(aff, (f.wb - f.w + f.we - f.w) / (f.wb + f.we - f.w) * 1.05, 0.0)",
      "JaccardDistance(i) per item x1.05",
      (EXACT, REFERENCE)),
    M("metric-overall", "metrics/impact.py",
      '**{m: _float(r[f"_{m}"]) / W for m in METRICS},',
      '**{m: _float(r[f"_{m}"]) / W * 1.05 for m in METRICS},',
      "overall(): SplitRate(T), MergeRate(T), JaccardDistance(T) x1.05",
      (EXACT, REFERENCE)),
    M("metric-slice-means", "metrics/impact.py",
      'return {**{m: g[f"_{m}"] / g.weight for m in METRICS}, "contribution": g._jaccard_distance / total_weight}',
      'return {**{m: g[f"_{m}"] / g.weight * 1.05 for m in METRICS}, "contribution": g._jaccard_distance / total_weight}',
      "per-slice and per-cluster metrics (weighted means) x1.05",
      (EXACT, REFERENCE)),

    # ------------------------------------------------------------------ quality/paper.py: the paper's estimator
    M("paper-delta-precision", "quality/paper.py",
      'dp = _dp(cls, valid, same, label, all_mask, totals["all"], "delta_precision",',
      'dp = _dp(cls, valid, same, label, all_mask, totals["all"] * 1.05, "delta_precision",',
      "paper estimator: ΔPrecision(T) x1.05",
      (FORMULAS, POWER, QUALITY)),
    M("paper-good-split", "quality/paper.py",
      'good_split_rate=_rate(cls, valid, same, "split", False, sr, "good_split_rate"),',
      'good_split_rate=_rate(cls, valid, same, "split", False, sr * 1.05, "good_split_rate"),',
      "paper estimator: GoodSplitRate x1.05",
      (FORMULAS, POWER, QUALITY)),
    M("paper-bad-split", "quality/paper.py",
      'bad_split_rate=_rate(cls, valid, same, "split", True, sr, "bad_split_rate"),',
      'bad_split_rate=_rate(cls, valid, same, "split", True, sr * 1.05, "bad_split_rate"),',
      "paper estimator: BadSplitRate x1.05",
      (FORMULAS, POWER, QUALITY)),
    M("paper-good-merge", "quality/paper.py",
      'good_merge_rate=_rate(cls, valid, same, "merge", True, mr, "good_merge_rate"),',
      'good_merge_rate=_rate(cls, valid, same, "merge", True, mr * 1.05, "good_merge_rate"),',
      "paper estimator: GoodMergeRate x1.05",
      (FORMULAS, POWER, QUALITY)),
    M("paper-bad-merge", "quality/paper.py",
      'bad_merge_rate=_rate(cls, valid, same, "merge", False, mr, "bad_merge_rate"),',
      'bad_merge_rate=_rate(cls, valid, same, "merge", False, mr * 1.05, "bad_merge_rate"),',
      "paper estimator: BadMergeRate x1.05",
      (FORMULAS, POWER, QUALITY)),
    M("paper-no-unsure-reweighting", "quality/paper.py",
      "w[in_c & valid] = n_all / n_ok",
      "w[in_c & valid] = 1.0",
      "paper estimator: per-class reweighting of usable judgements dropped",
      (FORMULAS, POWER, QUALITY)),
    M("paper-unsure-as-different", "quality/paper.py",
      """        j = "same" if c == "self" else by_pair.get(pid)
        if j in ("same", "different"):""",
      """        j = "same" if c == "self" else by_pair.get(pid)
        if j in ("same", "different", "unsure"):""",
      "paper estimator: 'unsure' counted as 'different' instead of dropped",
      (FORMULAS, POWER, QUALITY)),
    M("paper-se", "quality/paper.py",
      'multiplier * se if math.isfinite(se) else math.nan, n_judged,',
      'multiplier * se * 1.05 if math.isfinite(se) else math.nan, n_judged,',
      "paper estimator: SE of ΔPrecision (and slices) x1.05",
      (FORMULAS, POWER, QUALITY)),
    M("paper-slice-pairweight", "quality/paper.py",
      'contrib = _dp(cls, valid, same, label, mask, pw, "delta_precision_contribution"',
      'contrib = _dp(cls, valid, same, label, mask, pw * 1.5, "delta_precision_contribution"',
      "paper estimator, slices: pairweight(I) x1.5 as read",
      (FORMULAS, POWER, QUALITY)),
    M("paper-slice-weight", "quality/paper.py",
      "scale = W / w_i",
      "scale = W / (w_i * 1.05)",
      "paper estimator, slices: weight(I) x1.05 as read (ΔPrecision(I) /1.05)",
      (FORMULAS, POWER, QUALITY)),

    # ------------------------------------------------------------------ quality/stratified.py
    M("strat-u-split", "quality/stratified.py",
      """        U = sample.totals[c]
        if U == 0:
            continue
        lab = STRATUM_LABEL.get(c)""",
      """        U = sample.totals[c] * (1.05 if c == "split" else 1.0)
        if U == 0:
            continue
        lab = STRATUM_LABEL.get(c)""",
      "stratified estimator: U_split x1.05",
      (FORMULAS, POWER, STRATIFIED)),
    M("strat-u-merge", "quality/stratified.py",
      """        U = sample.totals[c]
        if U == 0:
            continue
        lab = STRATUM_LABEL.get(c)""",
      """        U = sample.totals[c] * (1.05 if c == "merge" else 1.0)
        if U == 0:
            continue
        lab = STRATUM_LABEL.get(c)""",
      "stratified estimator: U_merge x1.05",
      (FORMULAS, POWER, STRATIFIED)),
    M("strat-u-intersection", "quality/stratified.py",
      """        U = sample.totals[c]
        if U == 0:
            continue
        lab = STRATUM_LABEL.get(c)""",
      """        U = sample.totals[c] * (1.05 if c.startswith("intersection") else 1.0)
        if U == 0:
            continue
        lab = STRATUM_LABEL.get(c)""",
      "stratified estimator: U_intersection x1.05",
      (FORMULAS, POWER, STRATIFIED)),
    M("strat-self-term-estimate", "quality/stratified.py",
      'dp, var, n_j, missing = sample.self_term, 0.0, 0, []',
      'dp, var, n_j, missing = sample.self_term * 1.05, 0.0, 0, []',
      "stratified estimator: the self term x1.05 where it is added",
      (FORMULAS, POWER, STRATIFIED)),
    M("strat-self-term-stored", "sampling/cells.py",
      'return self.sums["self_signed"] / float(total_weight)',
      'return self.sums["self_signed"] / float(total_weight) * 1.05',
      "self_term(): the stored exact self term x1.05",
      (EXACT, STRATIFIED)),
    M("strat-slice-self-terms", "sampling/stratified.py",
      '(float(r[s] or 0.0) / W, float(r[u] or 0.0) / W)',
      '(float(r[s] or 0.0) / W * 1.05, float(r[u] or 0.0) / W)',
      "slice_self_terms(): each slice's exact self term x1.05",
      (EXACT, STRATIFIED)),
    M("strat-slice-self-term-estimate", "quality/stratified.py",
      'est, var, n_in, note = st, 0.0, 0, ""',
      'est, var, n_in, note = st * 1.05, 0.0, 0, ""',
      "stratified slices: the slice's self term x1.05 where it is added",
      (FORMULAS, POWER, STRATIFIED)),
    M("strat-slice-u", "quality/stratified.py",
      """                U = sample.totals[c]
                if U == 0:
                    continue
                if c in sample.census:""",
      """                U = sample.totals[c] * 1.05
                if U == 0:
                    continue
                if c in sample.census:""",
      "stratified slices: every U_c x1.05 in ΔPrecisionContribution(I)",
      (FORMULAS, POWER, STRATIFIED)),
    M("strat-slice-weight", "quality/stratified.py",
      "scale = float(total_weight) / w_i if w_i else math.nan",
      "scale = float(total_weight) / (w_i * 1.05) if w_i else math.nan",
      "stratified slices: weight(I) x1.05 as read (ΔPrecision(I) /1.05)",
      (FORMULAS, POWER, STRATIFIED)),
    M("strat-se", "quality/stratified.py",
      "se = math.sqrt(var) if math.isfinite(var) and math.isfinite(dp) else math.nan",
      "se = 1.05 * math.sqrt(var) if math.isfinite(var) and math.isfinite(dp) else math.nan",
      "stratified estimator: SE of ΔPrecision x1.05",
      (FORMULAS, POWER, STRATIFIED)),
    M("strat-var-ddof0", "quality/stratified.py",
      "return float(v.mean()), float(v.var(ddof=1)) if n > 1 else math.nan, n",
      "return float(v.mean()), float(v.var(ddof=0)) if n > 1 else math.nan, n",
      "stratified estimator: stratum variance with ddof=0 (SE too small)",
      (FORMULAS, POWER, STRATIFIED)),
    M("strat-rates", "quality/stratified.py",
      "return Estimate(name, rate_value * m, se, n, method=method,",
      "return Estimate(name, rate_value * m * 1.05, se, n, method=method,",
      "stratified estimator: every Good/Bad Split/Merge rate x1.05",
      (FORMULAS, POWER, STRATIFIED)),
    M("strat-unsure-as-different", "quality/stratified.py",
      """            j = by_pair.get(pid)
            if j in ("same", "different"):
                s = 1.0 if j == "same" else 0.0""",
      """            j = by_pair.get(pid)
            if j in ("same", "different", "unsure"):
                s = 1.0 if j == "same" else 0.0""",
      "stratified estimator: 'unsure' counted as 'different' instead of dropped",
      (FORMULAS, POWER, STRATIFIED)),
    M("strat-intersection-keeps-self", "sampling/stratified.py",
      'drop_self=stratum.startswith("intersection")',
      "drop_self=False",
      "stratified sampler: self draws kept in the intersection stratum",
      (FORMULAS, POWER, STRATIFIED)),

    # ------------------------------------------------------------------ quality/draw.py: stored slice multipliers
    M("draw-slice-weight", "quality/draw.py",
      'rows.append({"column": c, "value": key, "weight": r[w],',
      'rows.append({"column": c, "value": key, "weight": r[w] * 1.05,',
      "_slice_multipliers: the stored weight(I) x1.05",
      (EXACT, POWER, QUALITY, STRATIFIED)),
    M("draw-slice-pairweight", "quality/draw.py",
      '"pairweight": pws.get(key, 0.0) / total_weight,',
      '"pairweight": pws.get(key, 0.0) / total_weight * 1.05,',
      "_slice_multipliers: the stored pairweight(I) x1.05",
      (EXACT, POWER, QUALITY, STRATIFIED)),
    M("draw-slice-self-term", "quality/draw.py",
      '"self_term": selfs.get(key, (0.0, 0.0))[0],',
      '"self_term": selfs.get(key, (0.0, 0.0))[0] * 1.05,',
      "_slice_multipliers: the stored slice self term x1.05",
      (EXACT, POWER, STRATIFIED)),

    # ------------------------------------------------------------------ sampling/explore.py
    M("explore-inclusion", "sampling/explore.py",
      "pop.mutate(q=pop.weight * pop.jaccard_distance)",
      "pop.mutate(q=pop.weight * pop.jaccard_distance ** 1.05)",
      "exploration sampler: q(i) ∝ weight·JaccardDistance^1.05 (estimator unchanged)",
      (FORMULAS, POWER, EXPLORE)),
    M("explore-importance-weight", "sampling/explore.py",
      'iw = dc / dc.sum() * o["jaccard_distance"] / jd',
      'iw = dc / dc.sum() * o["jaccard_distance"] / jd * 1.05',
      "exploration sample: the stored importance weight w(i) x1.05",
      (EXACT, EXPLORE)),
    M("explore-estimator-weight", "sampling/explore.py",
      'g = t.mutate(**{y0: jd_t / t.jaccard_distance})',
      'g = t.mutate(**{y0: jd_t / t.jaccard_distance * 1.05})',
      "exploration estimates: JD(T)/JD(i) x1.05 (shares and contributions)",
      (FORMULAS, POWER, EXPLORE)),
    M("explore-weight-share", "sampling/explore.py",
      'aggs["s_share"] = (dc * g[y0]).sum()',
      'aggs["s_share"] = (dc * g[y0]).sum() * 1.05',
      "exploration estimates: the weight share x1.05",
      (FORMULAS, POWER, EXPLORE)),
    M("explore-split-contribution", "sampling/explore.py",
      'y = g[y0] * g[col]',
      'y = g[y0] * g[col] * (1.05 if short == "split" else 1.0)',
      "exploration estimates: the SplitRate contribution x1.05",
      (FORMULAS, POWER, EXPLORE)),
    M("explore-merge-contribution", "sampling/explore.py",
      'y = g[y0] * g[col]',
      'y = g[y0] * g[col] * (1.05 if short == "merge" else 1.0)',
      "exploration estimates: the MergeRate contribution x1.05",
      (FORMULAS, POWER, EXPLORE)),
    M("explore-jaccard-contribution", "sampling/explore.py",
      'y = g[y0] * g[col]',
      'y = g[y0] * g[col] * (1.05 if short == "jaccard" else 1.0)',
      "exploration estimates: the JaccardDistance contribution x1.05",
      (FORMULAS, POWER, EXPLORE)),
    M("explore-se", "sampling/explore.py",
      "return mean, math.sqrt(max(var, 0.0) / D) if D > 1 else math.nan",
      "return mean, 1.05 * math.sqrt(max(var, 0.0) / D) if D > 1 else math.nan",
      "exploration estimates: every standard error x1.05",
      (FORMULAS, POWER, EXPLORE)),

    # ------------------------------------------------------------------ sampling/clocks.py: the samplers' probabilities
    M("clock-rate", "sampling/clocks.py",
      "return t.mutate(dt0=-(u.ln()) / t[weight])",
      "return t.mutate(dt0=-(u.ln()) / t[weight] ** 1.05)",
      "clocks, one seed: first draw times at rate weight^1.05",
      (SAMPLING, QUALITY, EXPLORE)),
    M("clock-rate-many", "sampling/clocks.py",
      '.ln()) / x[weight])',
      '.ln()) / x[weight] ** 1.05)',
      "clocks, many seeds: first draw times at rate weight^1.05",
      (SAMPLING, STRATIFIED, QUALITY)),
    M("clock-replay-rate", "sampling/clocks.py",
      "rng.exponential(1.0 / w[i])",
      "rng.exponential(1.0 / w[i] ** 1.05)",
      "clocks, successive draws: later draws at rate weight^1.05",
      (SAMPLING, QUALITY, STRATIFIED)),
    M("clock-poisson-counts", "sampling/clocks.py",
      "mean = w * (horizon - dt0)",
      "mean = w ** 1.05 * (horizon - dt0)",
      "clocks, draw counts: Poisson means weight^1.05 · (M − dt0)",
      (SAMPLING, EXPLORE)),

    # ------------------------------------------------------------------ sampling/pairs.py: the pair sampler's probabilities
    M("pairs-merge-oversampled", "sampling/pairs.py",
      "\"item_id\", \"base_cluster\", \"exp_cluster\", u=t[col], label=label.cast(\"int8\"),",
      "\"item_id\", \"base_cluster\", \"exp_cluster\", u=t[col] * (1.05 if c == \"merge\" else 1.0), "
      "label=label.cast(\"int8\"),",
      "paper sampler: (vantage, merge) drawn ∝ 1.05·U_im (merge pairs oversampled 5%)",
      (POWER, QUALITY)),
    M("pairs-partner-outside", "sampling/pairs.py",
      "p_out = x.u * (x.total - width)",
      "p_out = x.u * (x.total - width) * 0.95",
      "partner sampler, split/merge: the last 5% of the partner weight never drawn",
      (POWER, EXACT, QUALITY, STRATIFIED)),
    M("pairs-partner-own", "sampling/pairs.py",
      "pos = ibis.ifelse(own, x.lo + x.u * width,",
      "pos = ibis.ifelse(own, x.lo + x.u * width * 0.95,",
      "partner sampler, stable: the last 5% of the fragment's weight never drawn",
      (POWER, EXACT, QUALITY, STRATIFIED)),

    # ------------------------------------------------------------------ core/join_buckets.py: large inputs in other orders
    M("large-no-distinct-ids", "core/join_buckets.py",
      "all(distinct_ids(eng, v, sizes.unique_check_rows) == v.rows",
      "all(True or distinct_ids(eng, v, sizes.unique_check_rows) == v.rows",
      "large inputs in other orders: equal row counts taken as proof of the same items, ids unchecked",
      (SCALE,)),
    # ------------------------------------------------------------------ quality intervals (issue 24)
    M("interval-t-df-n", "quality/result.py",
      "return float(t.ppf(p, n_judgements - 1)) if n_judgements >= 2",
      "return float(t.ppf(p, n_judgements)) if n_judgements >= 2",
      "intervals: Student t on n instead of n - 1 degrees of freedom",
      (INTERVALS,)),
    M("interval-ac-quantile", "quality/result.py",
      "lo, hi = self.centre - z * self.interval_se, self.centre + z * self.interval_se",
      "lo, hi = self.centre - 1.85 * self.interval_se, self.centre + 1.85 * self.interval_se",
      "intervals: a quantile of 1.85 instead of the 95% one on the Agresti-Coull path",
      (INTERVALS,)),
    M("interval-ac-centre", "quality/result.py",
      "pt = (k + 2.0) / (n + 4.0)",
      "pt = (k + 1.0) / (n + 2.0)",
      "intervals: Agresti-Coull centred at (k + 1)/(n + 2)",
      (INTERVALS,)),
    M("interval-self-judged", "quality/paper.py",
      'n_judged = int((use & (cls_a != "self")).sum())',
      "n_judged = int(use.sum())",
      "intervals: self draws counted as judged (more degrees of freedom)",
      (INTERVALS, FORMULAS)),
    M("interval-slice-precision-shift", "quality/estimate.py",
      'e[k] = None if e[k] is None else 1.0 + e[k]',
      'e[k] = None if e[k] is None else (e[k] if k != "estimate" else 1.0 + e[k])',
      "intervals: a slice's absolute-Precision interval left without its +1",
      (INTERVALS,)),
    M("interval-no-clip", "quality/result.py",
      "return clip((lo, hi), self.bounds)",
      "return (lo, hi)",
      "intervals: not cut to the feasible range",
      (INTERVALS,)),
    M("interval-range-side", "quality/stratified.py",
      "lo, hi = lo - (U if lab != 1 else 0.0), hi + (U if lab != -1 else 0.0)",
      "lo, hi = lo - U, hi + U",
      "intervals: ΔPrecision's feasible range too wide (each stratum taken as of both signs)",
      (INTERVALS,)),
    M("verdict-no-holm", "quality/verdict.py",
      "if p_values[k] <= alpha / (m - rank):",
      "if p_values[k] <= alpha:",
      "verdict: slices tested without a multiple-comparison correction",
      (VERDICT,)),
    M("verdict-direction", "quality/verdict.py",
      "    elif lo > 0:\n",
      "    elif lo > -1e-3:\n",
      "verdict: 'went up' when the interval reaches a little below 0",
      (VERDICT,)),
    # ------------------------------------------------------------------ issue 38, section 3: inside its interval
    M("interval-estimate-outside", "quality/result.py",
      "at any level.\n            lo, hi = min(lo, self.value), max(hi, self.value)\n",
      "at any level.\n            lo, hi = lo, hi\n",
      "intervals: a shifted (Agresti-Coull) interval not widened to reach its estimate (sums of strata)",
      (INSIDE, INTERVALS)),
    M("paper-dp-uncut", "quality/paper.py",
      "value = min(max(value, bounds[0]), bounds[1])",
      "value = value",
      "paper estimator: ΔPrecision left outside the range its interval is cut to",
      (INSIDE, INTERVALS)),
    M("strat-slice-uncut", "quality/stratified.py",
      "est = min(max(est, bounds[0]), bounds[1])",
      "est = est",
      "stratified slices: ΔPrecision(I) left outside the slice's range its interval is cut to",
      (INSIDE, INTERVALS)),
    M("ppi-estimate-uncut", "quality/combined.py",
      "v = min(max(v, bounds[0]), bounds[1])",
      "v = v",
      "model + people: an estimate left outside the range its interval is cut to",
      (INSIDE, PPI)),
    # ------------------------------------------------------------------ issue 38, section 6: not pinned before
    M("ppi-people-unsure-as-different", "quality/combined.py",
      """        a = people.get(p) if tasks is None or p in tasks else None
        if a in ("same", "different"):""",
      """        a = people.get(p) if tasks is None or p in tasks else None
        if a in ("same", "different", "unsure"):""",
      "model + people: a person's unsure counted as a judged different",
      (PINNED, PPI)),
    M("ppi-rates-range-0-1", "quality/combined.py",
      "    e = _estimate(name, part, rate, bounds=(0.0, rate), flip=flip, note=note)\n",
      "    e = _estimate(name, part, rate, bounds=(0.0, 1.0), flip=flip, note=note)\n",
      "model + people: Good/Bad rate intervals cut to [0, 1] instead of [0, the exact rate]",
      (PINNED, PPI)),
    M("verdict-ppi-no-fpc", "quality/next_step.py",
      "need = int(math.ceil(1.0 / ((1.0 / n - 1.0 / N) * ratio + 1.0 / N) if N > n else n / ratio))",
      "need = int(math.ceil(n / ratio))",
      "next step, model + people: people's judgements needed without the finite-population correction",
      (PINNED, VERDICT)),
    M("ppi-lambda-same-pairs", "quality/ppi.py",
      "        lk = _other_lambda(y, f, other, fallback, k)\n        if whole:",
      "        lk = _other_lambda(y, f, mine, fallback, k)\n        if whole:",
      "prediction-powered mean: each fold's λ tuned on its own pairs (the ones it corrects), not cross-fitted",
      (PINNED, PPI)),
    M("ppi-census-lambda-same-pairs", "quality/ppi.py",
      "            lk = _other_lambda(y, f, other, fallback, k)\n            lam_of[folds == k] = lk",
      "            lk = _other_lambda(y, f, mine, fallback, k)\n            lam_of[folds == k] = lk",
      "prediction-powered census total: each fold's λ tuned on its own pairs, not cross-fitted",
      (PINNED, PPI)),
    M("ppi-no-between-cells", "quality/ppi.py",
      "between = 0.0 if population else sum(s * (t - value) ** 2 for s, t in means.values())",
      "between = 0.0",
      "prediction-powered mean: the variance between cells (groups) dropped",
      (PINNED, PPI)),
    M("ppi-cells-wilson-no-fpc", "quality/combined.py",
      "            n_eff = n / (1.0 - n / Nc) if n < Nc else math.inf\n",
      "            n_eff = float(n)\n",
      "model + people rates by the model's cells: a sampled cell's Wilson interval without the share of its "
      "draws the people judged", (PPI,)),
    M("ppi-cells-no-first-phase", "quality/combined.py",
      "        first = z * z * self.first\n",
      "        first = 0.0\n",
      "model + people rates by the model's cells: the variance of the unit's draws (first phase) left out",
      (PPI,)),
    M("pilot-intersection-swapped", "sampling/allocation.py",
      'cls = [c + ("+" if lab > 0 else "-") if c == "intersection" else c for c, lab in zip(cls, labels)]',
      'cls = [c + ("-" if lab > 0 else "+") if c == "intersection" else c for c, lab in zip(cls, labels)]',
      "Neyman pilot: the σ of intersection+ and intersection- swapped",
      (PINNED, STRATIFIED)),
    M("explore-examples-by-draw-count", "sampling/explore.py",
      'return weighted_subsample(t, weight="importance_weight", n=int(n), seed=seed, key="item_id")',
      'return weighted_subsample(t, weight="draw_count", n=int(n), seed=seed, key="item_id")',
      "exploration examples drawn ∝ draw count instead of ∝ the item weight w(i)",
      (PINNED, EXPLORE)),
    # Session 20 (issues 38 and 41):
    M("cells-one-draw-undefined", "quality/distances.py",
      "    pooled = sum((members[c][2] - 1) * v for c, v in within.items()) / dof if dof else math.nan\n",
      "    pooled = math.nan\n",
      "a cell of one people's draw among several: its SE left undefined (no pooled within-cell variance)",
      ("tests/test_distances_by_answers.py",)),
    M("truth-delta-own-interval", "metrics/population.py",
      "                                       gains_losses_interval(gains, gain, losses, loss, r), r)",
      "                                       None, r)",
      "truth sample: ΔPrecision's and ΔRecall's interval their own symmetric logit one, not the gains' and "
      "losses' by MOVER", ("tests/test_truth_sample_reference.py",)),
    M("truth-delta-mover-r0", "metrics/population.py",
      "            r = min(max(cov / math.sqrt(vg * vl), -1.0), 1.0) if vg > 0 and vl > 0 else 0.0\n",
      "            r = 0.0\n",
      "truth sample: the gains and losses combined by MOVER as if independent (no correlation)",
      ("tests/test_truth_sample_reference.py",)),
    M("truth-gamma-no-unseen", "metrics/population.py",
      "        hi = float(gamma.ppf(1.0 - a, (y + w) ** 2 / (v + w * w), scale=(v + w * w) / (y + w)))",
      "        hi = float(gamma.ppf(1.0 - a, y * y / v, scale=v / y))",
      "truth sample: the gamma interval's upper end without one more entity's worth of mass",
      ("tests/test_truth_sample_reference.py",)),
    M("truth-gamma-certain-random", "metrics/population.py",
      "    sampled = pi < 1.0\n",
      "    sampled = pi <= 1.0\n",
      "truth sample: the entities certain to be sampled counted in the gamma's random part",
      ("tests/test_truth_sample_reference.py",)),
    # ------------------------------------------------------------------ issue 51: code the tests did not pin
    M("i51-drawn-cell-unsure-as-different", "quality/distances.py",
      'for k in idx if times.get(pids[k]) and by_pair.get(pids[k]) in ("same", "different")]',
      'for k in idx if times.get(pids[k]) and by_pair.get(pids[k]) in ("same", "different", "unsure")]',
      "census_cells_total: a people's unsure on a drawn census cell counted as different",
      (PINNED51,)),
    M("i51-drawn-interval-first-level", "quality/result.py",
      "        return self.ends[z]\n",
      "        return next(iter(self.ends.values()))\n",
      "DrawnInterval: every level answered with the first level's ends (the lift at 80% and 99% = at 95%)",
      (PINNED51,)),
    M("i51-census-part-draws-uncut", "quality/recall.py",
      "return np.clip(self.total + rng.normal(0.0, sd, size), self.lo, self.hi)",
      "return self.total + rng.normal(0.0, sd, size)",
      "recall lift: a census part's normal draws not cut to its range [lo, hi]",
      (PINNED51,)),
    M("i51-slice-masses-ties-dropped", "quality/exact_facts.py",
      "inter = affected(f) & (f.wb != f.we)",
      "inter = affected(f)",
      "recall_facts per slice: fragments whose Base and Exp clusters weigh the same dropped from every stratum",
      (PINNED51,)),
    M("i51-share-floor-ignored", "quality/combined.py",
      "    v = part.ivar if math.isfinite(part.ivar) and part.ivar > 0 else part.var\n",
      "    v = part.var\n",
      "model + people rates (_share_estimate): the interval's floored variance ignored",
      (PINNED51,)),
    M("i51-drawn-cell-kish-t-squared", "quality/distances.py",
      "k_eff = sr * sr / float((tk * rho * rho).sum())",
      "k_eff = sr * sr / float((tk * tk * rho * rho).sum())",
      "census_cells_total: a drawn cell's Kish size with times drawn squared",
      (PINNED51,)),
    M("i51-census-cell-part-no-fpc", "quality/combined.py",
      "kish / (1.0 - n / P) if n < P else math.inf",
      "kish if n < P else math.inf",
      "model + people rates by cells: a census cell judged in part without its finite-population correction",
      (PINNED51,)),
    M("i51-drawn-total-var-on-k", "quality/combined.py",
      "s2 = float((t * (v - mean) ** 2).sum() / (k - 1)) if k > 1 else math.nan",
      "s2 = float((t * (v - mean) ** 2).sum() / k) if k > 1 else math.nan",
      "model + people, a drawn census cell's total (_drawn_total): its variance on k, not k - 1",
      (PINNED51,)),
    M("i51-lambda-fallback-own-fold", "quality/ppi.py",
      "return float(fallback.get(1 - k, 0.0)) if fallback else 0.0",
      "return float(fallback.get(k, 0.0)) if fallback else 0.0",
      "_other_lambda: the fallback λ pooled from the fold's own pairs, not the other fold's",
      (PINNED51,)),
    M("i51-signed-pct-plus-zero", "quality/verdict_format.py",
      'return s if s.startswith("-") or s in ("n/a", display.pct(0.0)) else "+" + s',
      'return s if s.startswith("-") or s in ("n/a",) else "+" + s',
      'signed_pct: 0 (or float noise) read "+0.000%"',
      (PINNED51,)),
]
