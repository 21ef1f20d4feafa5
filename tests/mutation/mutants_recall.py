"""Mutants of the recall lift's code (issue 38, section 6, last paragraph): plausible bugs planted by an
independent review, each with the tests that kill it.

Same format as ``mutants.py`` (an exact snippet of a file under ``src/abcde/``, which must occur exactly
once, its replacement, a description, the test files in the order they run with ``-x``), kept apart
so the list there stays one engineer's. ``run.py`` reads ``mutants.py`` only; run these with a driver
that hands this list to it instead, e.g.::

    import importlib.util, sys
    sys.path.insert(0, "tests/mutation")
    import run
    spec = importlib.util.spec_from_file_location("abcde_mutants_recall", "tests/mutation/mutants_recall.py")
    mod = importlib.util.module_from_spec(spec); sys.modules[spec.name] = mod; spec.loader.exec_module(mod)
    run.load_mutants = lambda: mod.MUTANTS
    run.MARKERS = "not slow and not spark and not browser"   # the cheap tests only
    sys.exit(run.main(sys.argv[1:]))

Every mutant is killed by a cheap test (no simulation): ``test_recall_lift_pinned.py`` pins each
quantity exactly (hand-computed, or the brute-force reference of ``tests/reference.py``, at 1e-12).
"""

from __future__ import annotations


PINNED = "tests/test_recall_lift_pinned.py"  # this review's tests
RECALL = "tests/test_recall_lift.py"  # the recall lift's tests so far
DISTANCES = "tests/test_distances_by_answers.py"  # a census by the model's cells: its interval, shared with the lift


def _mutant_class():
    """The catalogue's own ``Mutant`` (tests/mutation/mutants.py), loaded from beside this file."""
    import importlib.util
    import sys
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("abcde_mutation_catalogue", Path(__file__).with_name("mutants.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # (dataclasses look their module up while the class is made)
    spec.loader.exec_module(mod)
    return mod.Mutant


Mutant = _mutant_class()


M = Mutant
BOTH_TESTS = (PINNED, RECALL)
AGREED = "tests/test_agreed_cells.py"  # the agreed stratum by cells (issue 49)

MUTANTS: list[Mutant] = [
    # ------------------------------------------------------------------ quality/recall.py: reweighting
    M("rl-factor-split-e", "quality/recall.py",
      '    if kind == "split":\n        return b\n',
      '    if kind == "split":\n        return e\n',
      "factor: a split draw reweighted by W(E)/W instead of W(B)/W", BOTH_TESTS),
    M("rl-factor-merge-b", "quality/recall.py",
      '    if kind == "merge":\n        return e\n',
      '    if kind == "merge":\n        return b\n',
      "factor: a merge draw reweighted by W(B)/W instead of W(E)/W", BOTH_TESTS),
    M("rl-factor-inter", "quality/recall.py",
      "        return b * e / abs(b - e)",
      "        return b * e",
      "factor: an intersection draw reweighted by b·e, without the 1/|b − e|", BOTH_TESTS),
    M("rl-cw-swapped", "quality/exact_facts.py",
      'cw = {r["item_id"]: (float(r["wb"]) / W, float(r["we"]) / W) for r in rows}',
      'cw = {r["item_id"]: (float(r["we"]) / W, float(r["wb"]) / W) for r in rows}',
      "recall_facts: the drawn items' cluster weights stored as (W(E), W(B)): b and e swapped", BOTH_TESTS),
    M("rl-items-no-stable", "samples/facts.py",
      'WEIGHED_CLASSES = ("split", "merge", "stable")',
      'WEIGHED_CLASSES = ("split", "merge")',
      "recall_items: the intersection draws' items left out of the cluster weights stored", BOTH_TESTS),
    # ------------------------------------------------------------------ quality/recall.py: the estimate
    M("rl-both-agreed-only", "quality/recall.py",
      "    both = sum(parts[k].total for k in BOTH)\n",
      '    both = parts["agreed"].total\n',
      "lift_estimate: T_Base without the intersection strata (T_both = T_agreed)", BOTH_TESTS),
    M("rl-den-no-split", "quality/recall.py",
      "    den = both + s.total\n",
      "    den = both\n",
      "lift_estimate: Λ divided by T_both instead of T_Base = T_both + T_split", BOTH_TESTS),
    M("rl-delta-no-1plus", "quality/recall.py",
      "(1.0 + lam) ** 2 * s.var",
      "s.var",
      "delta method: the split stratum's variance without its (1 + Λ)² factor", BOTH_TESTS),
    M("rl-delta-agreed-only", "quality/recall.py",
      "lam * lam * sum(parts[k].var for k in BOTH)",
      'lam * lam * parts["agreed"].var',
      "delta method: the intersection strata's variance left out of the Λ²·Var(T_both) term", BOTH_TESTS),
    M("rl-var-mass-once", "quality/recall.py",
      "return _Part(mass * p, mass * mass * v, 0.0, mass, n, False, share=p, n_eff=n_eff)",
      "return _Part(mass * p, mass * v, 0.0, mass, n, False, share=p, n_eff=n_eff)",
      "a sampled stratum's Var(T̂_s) = M_s·Var(p̂) instead of M_s²·Var(p̂)", BOTH_TESTS),
    M("rl-exact-any", "quality/recall.py",
      "    exact = all(p.exact for p in parts.values())\n",
      "    exact = any(p.exact for p in parts.values())\n",
      "lift_estimate: exact when any stratum is (not every one)", BOTH_TESTS),
    # ------------------------------------------------------------------ quality/recall.py: the interval
    M("rl-posterior-n", "quality/recall.py",
      "            return self.hi * share_draws(rng, self.share, self.n_eff, size)\n",
      "            return self.hi * share_draws(rng, self.share, self.n, size)\n",
      "a stratum's share drawn on its judged draws n instead of the effective n*", BOTH_TESTS),
    M("rl-posterior-jeffreys-at-one", "quality/result.py",
      "    if p <= 0.0:\n        return rng.beta(1.0, n, size)\n",
      "",
      "a share whose judgements all agree drawn from Jeffreys' own Beta(½, n + ½) (not the modified Beta(1, n))",
      BOTH_TESTS),
    M("rl-posterior-no-half", "quality/result.py",
      "    return rng.beta(n * p + 0.5, n * (1.0 - p) + 0.5, size)\n",
      "    return rng.beta(n * p + 1.0, n * (1.0 - p) + 1.0, size)\n",
      "a share drawn from its uniform-prior posterior Beta(k + 1, n − k + 1) (not Jeffreys')", BOTH_TESTS),
    M("rl-posterior-tail", "quality/result.py",
      "    a = NormalDist().cdf(-z)\n",
      "    a = 2.0 * NormalDist().cdf(-z)\n",
      "the lift's interval: its draws' 5% and 95% quantiles for a 95% interval (both tails' mass in each)",
      BOTH_TESTS),
    M("rl-lift-of-agreed-only", "quality/recall.py",
      "    den = sum(t[k] for k in BOTH) + ts\n",
      '    den = t["agreed"] + ts\n',
      "_lift_of (the range): T_Base without the intersection strata", BOTH_TESTS),
    M("rl-draws-agreed-only", "quality/recall.py",
      "    den = sum(t[k] for k in BOTH) + t[\"split\"]\n",
      "    den = t[\"agreed\"] + t[\"split\"]\n",
      "the lift's draws: T_Base without the intersection strata", BOTH_TESTS),
    M("rl-wilson-centre", "quality/result.py",
      "    c = (p + z * z / (2.0 * n)) / d\n",
      "    c = p\n",
      "wilson: centred on p̂ instead of (p̂ + z²/2n)/(1 + z²/n)", ("tests/test_ppi.py",)),
    # ------------------------------------------------------------------ quality/recall.py: census, slices, cells
    M("rl-census-no-factor", "quality/recall.py",
      "_census_part(draws, by_pair, _Factors(facts.cluster_weights, kind).of, inside, cells)",
      "_census_part(draws, by_pair, lambda x: 1.0, inside, cells)",
      "a census pair of the split, merge or intersection strata counted without its factor", BOTH_TESTS),
    M("rl-census-half", "quality/recall.py",
      "(inside(x) + inside(y)) / 2.0",
      "float(inside(x))",
      "a census pair in a slice: its whole weight when its first item is in the slice (not half per end)",
      BOTH_TESTS),
    M("rl-slice-overall-masses", "quality/recall.py",
      "masses=dict(zip(RECALL_STRATA, m)))",
      "masses=None)",
      "slices: the overall pair masses instead of the slice's M_s(I)", BOTH_TESTS),
    M("rl-slice-agreed-inter", "quality/exact_facts.py",
      "__abcde_a=ibis.ifelse(inter, 0.0, within),",
      "__abcde_a=within,",
      "recall_facts: a slice's agreed mass includes the intersection fragments' pairs", BOTH_TESTS),
    M("rl-slice-self", "quality/exact_facts.py",
      "        within = j.weight * (f.w - j.weight)\n",
      "        within = j.weight * f.w\n",
      "recall_facts: a slice's within-fragment masses include the self pairs", BOTH_TESTS),
    M("rl-cells-ignored", "quality/recall.py",
      "    judged = {k: judged_draws(sample.draws[k], by_pair, _weights_for(facts, k), k, cells=cells)",
      "    judged = {k: judged_draws(sample.draws[k], by_pair, _weights_for(facts, k), k, cells=None)",
      "estimate_recall_lift: the people's cells ignored (their draws a plain subset)", BOTH_TESTS),
    M("rl-census-cells-ignored", "quality/recall.py",
      "    if cells is not None:\n        c = census_cells_total(draws, by_pair, w, cells)\n",
      "    if False:\n        c = census_cells_total(draws, by_pair, w, cells)\n",
      "a census stratum's pairs left to the model read as like all the people's pairs (not their cell's)",
      (RECALL,)),
    M("rl-census-cell-draws-ignored", "quality/distances.py",
      "        x += mc * (share_draws(rng, p, n, size) - p)\n",
      "        pass\n",
      "a census stratum by the model's cells: only its cells judged whole vary (its drawn cells' shares fixed)",
      BOTH_TESTS),
    M("rl-census-cell-n", "quality/distances.py",
      "        n = p * (1.0 - p) / vp if 0.0 < p < 1.0 and math.isfinite(vp) and vp > 0 else k_eff\n",
      "        n = k_eff\n",
      "a drawn census cell's share drawn on its draws' Kish size even when its share varies", BOTH_TESTS),
    M("rl-census-cell-whole-var", "quality/recall.py",
      "cells_deviation(rng, size, self.cells, self.whole_var)",
      "cells_deviation(rng, size, self.cells, self.var)",
      "a census stratum by the model's cells: its drawn cells' variance counted again in the normal term",
      BOTH_TESTS),
    # ------------------------------------------------------------------ quality/distances.py: a census by cell
    M("dist-cells-one-interval", "quality/distances.py",
      "    if c.drawn:\n        return Estimate(name, value, se, n, method=method, bounds=bounds,\n",
      "    if False:\n        return Estimate(name, value, se, n, method=method, bounds=bounds,\n",
      "a distance's census part by the model's cells: one Agresti–Coull interval on the stratum's share (not "
      "each drawn cell's posterior)", (DISTANCES,)),
    M("dist-mover-sum-linear", "quality/distances.py",
      "        return (va + vb - math.hypot(va - la, vb - lb), va + vb + math.hypot(ha - va, hb - vb))\n",
      "        return (la + lb, ha + hb)\n",
      "GoodDistance by MOVER: the parts' ends added (not their distances in quadrature)", (DISTANCES,)),
    M("rl-nothing-changed-or", "quality/recall.py",
      "    if s.exact and m.exact and s.hi == 0 and m.hi == 0:",
      "    if s.exact and m.exact and (s.hi == 0 or m.hi == 0):",
      "lift_estimate: 'nothing split or merged' (Λ = 0 exactly) when nothing is split or nothing merged",
      BOTH_TESTS),
    M("rl-census-unsure-exact", "quality/recall.py",
      "    return _Part(t, v, known, known + rest, n, rest == 0.0)\n",
      "    return _Part(t, v, known, known + rest, n, True)\n",
      "a census stratum with pairs left unsure (or unjudged) called exact", BOTH_TESTS),
    M("rl-slice-split-merge-swapped", "quality/exact_facts.py",
      "__abcde_s=j.weight * (f.wb - f.w), __abcde_m=j.weight * (f.we - f.w))",
      "__abcde_s=j.weight * (f.we - f.w), __abcde_m=j.weight * (f.wb - f.w))",
      "recall_facts: a slice's split and merge masses swapped", BOTH_TESTS),
    M("rl-stored-ids-str", "samples/facts.py",
      '    return int if meta.get("id_type") == "integer" else str\n',
      "    return str\n",
      "stored facts (the recall lift's, the distances'): integer item ids read back as text (their cluster weights "
      "not found)",
      BOTH_TESTS),
    # ------------------------------------------------------------------ sampling/cells.py: the pair masses
    # (one aggregate of the cells, issue 49; metrics/impact.py's link_masses, which pointwise reads, is
    # checked against it in tests/test_agreed_cells.py)
    M("masses-W", "sampling/cells.py",
      "        W2, s = float(total_weight) ** 2, self.sums\n",
      "        W2, s = float(total_weight), self.sums\n",
      "link_masses: the masses divided by W instead of W²", BOTH_TESTS),
    M("masses-agreed-inter", "sampling/cells.py",
      "        m_agreed=within.sum(where=agreed),\n",
      "        m_agreed=within.sum(where=f.n > 1),\n",
      "link_masses: the agreed mass includes the intersection fragments' pairs", BOTH_TESTS),
    M("masses-self", "sampling/cells.py",
      "    within = f.w * f.w - f.w2\n    # The non-self",
      "    within = f.w * f.w\n    # The non-self",
      "link_masses: the within-fragment masses include the self pairs", BOTH_TESTS),
    M("masses-merge-base", "sampling/cells.py",
      "m_merge=(f.w * (f.we - f.w)).sum(where=f.n < f.ne),",
      "m_merge=(f.w * (f.we - f.w)).sum(where=f.n < f.nb),",
      "link_masses: the merge mass summed over the fragments smaller than their Base cluster", BOTH_TESTS),
    # ------------------------------------------------------------------ sampling/cells.py, sampling/pairs.py
    M("pairs-agreed-frag-inter", "sampling/cells.py",
      "    return (f.n > 1) & ~inter\n",
      "    return f.n > 1\n",
      "agreed_cells: the intersection fragments included (a pair in two strata)", BOTH_TESTS),
    M("pairs-agreed-u", "sampling/pairs.py",
      "u=j.weight * f.w, label=ibis.literal(0)",
      "u=j.weight, label=ibis.literal(0)",
      "agreed_population: the vantage item drawn ∝ w_i instead of w_i·W(F)", BOTH_TESTS),
    M("pairs-agreed-partner-count", "sampling/pairs.py",
      "    items = rows_of_fragments(diff, frags)\n    win = ibis.window(",
      "    items = rows_of_fragments(diff, frags).mutate(weight=ibis.literal(1.0))\n    win = ibis.window(",
      "_agreed_partners: the partner drawn ∝ 1 (by count) instead of ∝ w_j", BOTH_TESTS),
    M("pairs-agreed-partner-pos", "sampling/pairs.py",
      "pos=x.u * x.total, draw=x.draw).view()",
      "pos=x.u * x.total * 0.95, draw=x.draw).view()",
      "_agreed_partners: the partner never the last 5% of the fragment's weight", BOTH_TESTS),
    M("pairs-count-agreed", "sampling/cells.py",
      "n_agreed=pairs_within.sum(where=agreed),",
      "n_agreed=pairs_within.sum(where=f.n > 1),",
      "pair_counts: the agreed stratum's pairs counted with the intersection fragments'", BOTH_TESTS),
    M("pairs-census-agreed-weight", "sampling/pairs.py",
      "pair_weight=2.0 * a.weight * b.weight / (W * W))",
      "pair_weight=a.weight * b.weight / (W * W))",
      "stratum_pairs: an agreed census pair weighs w_a·w_b/W² (one ordered pair) instead of 2·w_a·w_b/W²",
      BOTH_TESTS),
    # ------------------------------------------------------------------ sampling/agreed.py (issue 49)
    M("agreed-cells-vantage", "sampling/agreed.py",
      "        i = _pick(cum_a, u2)\n",
      "        i = _pick(cum_w, u2)\n",
      "draw_agreed: the vantage item drawn ∝ w_i instead of w_i·(W(F) − w_i)", (AGREED,)),
    M("agreed-cells-partner-self", "sampling/agreed.py",
      "        pos = pos + w_i if pos >= lo else pos",
      "        pos = pos",
      "draw_agreed: the partner drawn ∝ w_j over the cell's other items' weights without skipping the vantage",
      (AGREED,)),
    M("agreed-cells-group", "sampling/agreed.py",
      'gi = np.minimum(np.searchsorted(cum, u[:, 0] * cum[-1], side="right"), len(cum) - 1)',
      "gi = np.minimum((u[:, 0] * len(cum)).astype(int), len(cum) - 1)",
      "draw_agreed: a group of agreed cells drawn uniformly instead of ∝ its mass", (AGREED,)),
    M("agreed-cells-cell", "sampling/agreed.py",
      "        keys.append(gkeys[_pick(gcum, u1)])\n",
      "        keys.append(gkeys[min(int(u1 * len(gkeys)), len(gkeys) - 1)])\n",
      "draw_agreed: a cell of its group drawn uniformly instead of ∝ W(F)² − Σw²", (AGREED,)),
    # ------------------------------------------------------------------ quality/stratified.py
    M("strat-agreed-self-kept", "sampling/stratified.py",
      'drop_self=stratum.startswith("intersection") or stratum == "agreed")',
      'drop_self=stratum.startswith("intersection"))',
      "sample_stratified_many: the agreed stratum's self draws not rejected", BOTH_TESTS),
    M("strat-share-no-1plus", "sampling/allocation.py",
      "    b = (1 + lift) * ms * sc + mm * sc\n",
      "    b = ms * sc + mm * sc\n",
      "agreed_share: the split stratum's gradient without (1 + Λ)", BOTH_TESTS),
    M("strat-share-no-lift", "sampling/allocation.py",
      "    a = abs(lift) * ma * sa\n",
      "    a = ma * sa\n",
      "agreed_share: the agreed stratum's gradient without |Λ|", BOTH_TESTS),
    M("strat-share-no-floor", "sampling/allocation.py",
      "    return min(max(share, lo), hi)\n",
      "    return min(share, hi)\n",
      "agreed_share: not cut to at least 0.1 (no agreed pair when as much is split as merged)", BOTH_TESTS),
    M("strat-agreed-budget-no-half", "sampling/allocation.py",
      "    n = min(max(2, int(math.floor(share * budget + 0.5))), budget // 2)\n",
      "    n = max(2, int(math.floor(share * budget + 0.5)))\n",
      "agreed_budget: not at most half the budget (2 of a budget of 1: not monotone)", BOTH_TESTS),
    M("strat-agreed-budget-ceil", "sampling/allocation.py",
      "int(math.floor(share * budget + 0.5))",
      "int(math.ceil(share * budget))",
      "agreed_budget: share·budget rounded up instead of to the nearest", BOTH_TESTS),
    M("strat-split-budget-floor", "sampling/allocation.py",
      "    if budget - n_a < floor:\n        n_a = budget - floor\n",
      "    if budget - n_a < floor:\n        n_a = max(budget - floor, 2)\n",
      "split_budget: at least 2 agreed pairs even when the floor leaves fewer (old strata shrink)", BOTH_TESTS),
    M("strat-weights-agreed", "sampling/allocation.py",
      '        out["agreed"] = int(budgets["agreed"]) * u / n if n and u > 0 else 1.0\n',
      '        out["agreed"] = u / n if n and u > 0 else 1.0\n',
      "stratum_weights: the agreed stratum weighs one pair's share, not its budget's", BOTH_TESTS),
    M("strat-agreed-cap-ignored", "sampling/allocation.py",
      "    n_a = agreed_budget(budget, share, (caps or {}).get(\"agreed\"))\n",
      "    n_a = agreed_budget(budget, share)\n",
      "split_budget: the agreed budget not capped at its pairs (the rest not given to the others)", BOTH_TESTS),
    # ------------------------------------------------------------------ quality/draw.py
    M("draw-extend-no-floor", "quality/draw.py",
      "        strata, floor = STRATA, int(m[\"budget\"])\n",
      "        strata, floor = STRATA, 0\n",
      "--extend of a sample drawn before the agreed stratum: its strata not kept at their budget", BOTH_TESTS),
    M("draw-recall-no-slices", "quality/draw.py",
      "meta[\"recall\"] = recall_record(recall_facts(diff, recall_items(draws), slice_by=slice_by,",
      "meta[\"recall\"] = recall_record(recall_facts(diff, recall_items(draws), slice_by=(),",
      "the recall metadata without the slices' masses", BOTH_TESTS),
    # ------------------------------------------------------------------ quality/estimate.py _with_recall
    M("est-recall-cells-dropped", "quality/estimate.py",
      "        r = _with_recall(r, s, people.by_pair, slice_by, cells=cells, people=True)\n",
      "        r = _with_recall(r, s, people.by_pair, slice_by, people=True)\n",
      "_with_recall: the people's cells not passed (tasks chosen by a model's answers read as a plain subset)",
      BOTH_TESTS),
    M("est-recall-ppi-all", "quality/estimate.py",
      "        r = _with_recall(r, s, pb, slice_by, people=True)\n",
      "        r = _with_recall(r, s, {**model.by_pair, **pb}, slice_by, people=True)\n",
      "_with_recall (model + people): the model's judgements used for the pairs people did not judge",
      BOTH_TESTS),
    # ------------------------------------------------------------------ metrics/pointwise.py, report/build.py
    M("pw-true-links-agreed", "metrics/pointwise.py",
      'true_links=link_masses(diff, o["total_weight"])["both"]',
      'true_links=link_masses(diff, o["total_weight"])["agreed"]',
      "pointwise true_links: the agreed stratum's mass instead of every pair together in both", BOTH_TESTS),
    M("report-truth-lift-recall", "quality/verdict_truth.py",
      '        tb, te = _num(t["base"].get("true_links")), _num(t["exp"].get("true_links"))\n',
      '        tb, te = _num(t["base"].get("recall")), _num(t["exp"].get("recall"))\n',
      "truth_view: the ratio of the pointwise recalls instead of the true links'", BOTH_TESTS),
    M("report-truth-lift-inverted", "quality/verdict_truth.py",
      "value = te / tb - 1.0 if same_items",
      "value = tb / te - 1.0 if same_items",
      "truth_view: T_Base/T_Exp − 1 instead of T_Exp/T_Base − 1", BOTH_TESTS),
]
