"""Cluster ids that stay (issue 54): two id-assignment schemes as tagged clusterings
(:func:`abcde.ids.tag_clusterings`) and the exact id table (:func:`abcde.ids.id_table`).

The test world is the bundled example: the history is the Base clustering with its cluster ids, the
current clustering is Exp. The Base scheme gives every current cluster a fresh id; the Exp scheme
gives a current cluster the historical id of its largest overlap when that overlap holds more than
half of the historical cluster's items (so no id goes to two clusters). Everything checked here is
computed again in the test from plain dictionaries, sharing no code with the library."""

from __future__ import annotations

import collections
import html
import json
import math
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from content import assert_shows

from abcde.cli import main
from abcde.errors import InputError
from abcde.examples import example_paths
from abcde.ids import CLASSES, id_table, tag_clusterings

P = {k: str(v) for k, v in example_paths().items()}


def column_dict(t: pa.Table, key: str, value: str) -> dict:
    return dict(zip(t.column(key).to_pylist(), t.column(value).to_pylist()))


@pytest.fixture(scope="module")
def world():
    hist = column_dict(pq.read_table(P["base"]), "item_id", "cluster_id")
    cur = column_dict(pq.read_table(P["exp"]), "item_id", "cluster_id")
    items = pq.read_table(P["items"])
    weight = column_dict(items, "item_id", "weight")
    entity = column_dict(items, "item_id", "entity_id")
    members = collections.defaultdict(list)
    for i, c in cur.items():
        members[c].append(i)
    hist_size = collections.Counter(hist.values())
    fresh = {c: f"new-{c}" for c in members}
    inherit = {}
    for c, its in members.items():
        k, n = collections.Counter(hist[i] for i in its).most_common(1)[0]
        inherit[c] = str(k) if 2 * n > hist_size[k] else f"new-{c}"
    assert len(set(inherit.values())) == len(inherit)  # a scheme never repeats an id
    maps = {name: pa.table({"cluster_id": list(m), "id": list(m.values())})
            for name, m in (("fresh", fresh), ("inherit", inherit))}
    return {"hist": hist, "cur": cur, "weight": weight, "entity": entity, "fresh": fresh, "inherit": inherit,
            "maps": maps}


@pytest.fixture(scope="module")
def tagged(world):
    return tag_clusterings(P["base"], P["exp"], world["maps"]["fresh"], world["maps"]["inherit"], items=P["items"],
                           hist_scale=2.0)


def expected_tagging(world, scheme: str, scale: float):
    """The tagged clustering of ``scheme`` and the tagged weights, from the definitions."""
    clusters = {f"h:{i}": str(k) for i, k in world["hist"].items()}
    clusters.update({f"c:{i}": world[scheme][c] for i, c in world["cur"].items()})
    weights = {f"h:{i}": world["weight"][i] * scale for i in world["hist"]}
    weights.update({f"c:{i}": world["weight"][i] for i in world["cur"]})
    return clusters, weights


def test_the_tagged_clusterings_follow_the_construction(world, tagged):
    a = tagged.to_arrow()
    for side, scheme in (("base", "fresh"), ("exp", "inherit")):
        clusters, weights = expected_tagging(world, scheme, 2.0)
        assert column_dict(a[side], "item_id", "cluster_id") == clusters
    _, weights = expected_tagging(world, "fresh", 2.0)
    got = column_dict(a["items"], "item_id", "weight")
    assert got.keys() == weights.keys() and all(got[k] == pytest.approx(weights[k], rel=1e-15) for k in got)
    sides = column_dict(a["items"], "item_id", "id_side")
    assert {sides[f"h:{i}"] for i in world["hist"]} == {"published earlier"}
    assert {sides[f"c:{i}"] for i in world["cur"]} == {"current"}
    # attributes carried to both copies
    ent = column_dict(a["items"], "item_id", "entity_id")
    assert all(ent[f"h:{i}"] == ent[f"c:{i}"] == world["entity"][i] for i in world["cur"])


def co_members(clusters: dict) -> dict:
    by = collections.defaultdict(set)
    for i, k in clusters.items():
        by[k].add(i)
    return by


def test_every_pair_the_schemes_disagree_on_is_current_with_historical(world, tagged):
    """Historical–historical and current–current co-membership are the same on both sides: every pair
    in one tagged cluster and not the other pairs a current copy with a historical one."""
    a = tagged.to_arrow()
    base, exp = (column_dict(a[s], "item_id", "cluster_id") for s in ("base", "exp"))
    seen = 0
    for one, other in ((base, exp), (exp, base)):
        for members in co_members(one).values():
            hs = [i for i in members if i.startswith("h:")]
            cs = [i for i in members if i.startswith("c:")]
            for group in (hs, cs):  # same-side pairs are together on both sides
                assert len({other[i] for i in group}) <= 1, group[:3]
            seen += sum(1 for h in hs for c in cs if other[h] != other[c])
    assert seen > 0  # the schemes differ


def test_the_same_scheme_on_both_sides_changes_nothing(world):
    import abcde

    t = tag_clusterings(P["base"], P["exp"], world["maps"]["inherit"], world["maps"]["inherit"], items=P["items"])
    a = t.to_arrow()
    r = abcde.impact(a["base"], a["exp"], items=a["items"])
    assert r.affected_items == 0


def expected_lineage(world, scheme: str) -> dict:
    """Each id's lineage under ``scheme``, from the module's definitions, with plain dictionaries:
    ``{id: {"class", "owner", "kept", "moved", "incoming", "published"}}`` (``published``: the weight of
    its historical items still current; ``owner``: the current cluster given it, or None)."""
    hist, cur, w = world["hist"], world["cur"], world["weight"]
    given = world[scheme]
    owner = {k: c for c, k in given.items()}
    published = {str(k) for k in hist.values()}
    kept, moved, incoming = collections.Counter(), collections.Counter(), collections.Counter()
    still = collections.Counter()
    for i, c in cur.items():
        if i in hist:
            k, now = str(hist[i]), given[c]
            still[k] += w[i]
            if k == now:
                kept[k] += w[i]
            else:
                moved[k] += w[i]
                incoming[now] += w[i]
    out = {}
    for k in published | set(given.values()):
        if k in published and k not in owner:
            cls = "retired"
        elif k not in published:
            cls = "new"
        elif moved[k] == 0 and incoming[k] == 0:
            cls = "continuing"
        elif moved[k] >= incoming[k]:
            cls = "split"
        else:
            cls = "merged"
        out[k] = {"class": cls, "owner": None if k not in owner else str(owner[k]), "kept": kept[k],
                  "moved": moved[k], "incoming": incoming[k], "published": still[k]}
    return out


def expected_classes(world, scheme: str) -> dict:
    """Each id's class under ``scheme``, from the module's definitions, with plain dictionaries."""
    return {k: v["class"] for k, v in expected_lineage(world, scheme).items()}


def test_the_id_table_classes_and_counts_are_exact(world, tagged):
    t = id_table(tagged)
    got = {s: column_dict(t.table, "id", f"class_{s}") for s in ("base", "exp")}
    for s, scheme in (("base", "fresh"), ("exp", "inherit")):
        want = expected_classes(world, scheme)
        assert {k: v for k, v in got[s].items() if v is not None} == want
        assert t.counts[s] == {c: sum(1 for v in want.values() if v == c) for c in CLASSES}
    # the fresh scheme keeps no id; the inheriting one keeps most
    assert t.counts["base"]["continuing"] == 0 and t.counts["exp"]["continuing"] > t.counts["exp"]["retired"]
    diff = t.differing.to_pylist()
    assert diff and all(r["class_base"] != r["class_exp"] for r in diff)
    # most weight first, weights compared in single precision (sums of the same weights in another order
    # differ in their last bits: those tie, and the id decides)
    weights = pa.array([r["hist_weight"] for r in diff]).cast(pa.float32()).to_pylist()
    assert weights == sorted(weights, reverse=True)
    json.dumps(t.to_dict())  # JSON-ready


def true_links(clusters: dict, entity: dict, weight: dict) -> float:
    """Σ w_i·w_j over ordered pairs i ≠ j of one cluster and one entity (the tagged items' entity is
    their item's)."""
    cells = collections.defaultdict(lambda: [0.0, 0.0])
    for i, k in clusters.items():
        cell = cells[(k, entity[i.split(":", 1)[1]])]
        cell[0] += weight[i]
        cell[1] += weight[i] ** 2
    return math.fsum(s * s - q for s, q in cells.values())


def test_inheriting_ids_keeps_more_ids_for_the_same_concept_judged_by_the_oracle(world, tagged, tmp_path):
    """The whole quality job on the tagged clusterings, the oracle judging by the true entity carried
    to both copies: Exp (inheriting) keeps more ids for the same concept, and the recall lift's
    interval holds its exact value, computed here from the definitions."""
    from abcde.quality import draw_pair_sample, estimate_quality

    a = tagged.to_arrow()
    for k, v in a.items():
        pq.write_table(v, tmp_path / f"{k}.parquet")
    s = draw_pair_sample(tmp_path / "base.parquet", tmp_path / "exp.parquet", tmp_path / "s", items=tmp_path /
                         "items.parquet", budget=300, seed=1, hide=["entity_id"])
    r = CliRunner().invoke(main, ["judge", "oracle", str(s), "--oracle-column", "entity_id"])
    assert r.exit_code == 0, r.output
    q = estimate_quality(s).to_dict()
    weights = column_dict(a["items"], "item_id", "weight")
    base, exp = (column_dict(a[x], "item_id", "cluster_id") for x in ("base", "exp"))
    exact = true_links(exp, world["entity"], weights) / true_links(base, world["entity"], weights) - 1
    rl = q["recall_lift"]
    assert exact > 0 and rl["ci_low"] <= exact <= rl["ci_high"], (exact, rl)
    assert q["verdict_facts"]["recall"]["direction"] == "up", q["verdict"]


@pytest.mark.parametrize("change,said", [
    ("repeat", "gives id"),
    ("unknown", "does not have"),
    ("missing", "gives no id to some clusters"),
    ("twice", "times"),
])
def test_a_bad_map_is_one_clear_line(world, change, said):
    m = dict(world["inherit"])
    rows = list(m.items())
    if change == "repeat":
        rows[1] = (rows[1][0], rows[0][1])
    elif change == "unknown":
        rows.append(("no-such-cluster", "x1"))
    elif change == "missing":
        rows = rows[1:]
    elif change == "twice":
        rows.append((rows[0][0], "x2"))
    bad = pa.table({"cluster_id": [r[0] for r in rows], "id": [r[1] for r in rows]})
    with pytest.raises(InputError, match=said) as e:
        tag_clusterings(P["base"], P["exp"], world["maps"]["fresh"], bad, items=P["items"])
    assert "exp-ids" in str(e.value) and "\n" not in str(e.value)


def test_items_the_items_table_lacks_and_a_bad_scale_are_refused(world):
    items = pq.read_table(P["items"])
    with pytest.raises(InputError, match="not in the items table"):
        tag_clusterings(P["base"], P["exp"], world["maps"]["fresh"], world["maps"]["inherit"], items=items.slice(1))
    for s in (0, -1.0, float("nan"), float("inf"), True):
        with pytest.raises(InputError, match="hist_scale"):
            tag_clusterings(P["base"], P["exp"], world["maps"]["fresh"], world["maps"]["inherit"], hist_scale=s)


def test_the_command_writes_an_evaluation_directory_of_the_tagged_clusterings(tmp_path):
    """``abcde ids`` on the bundled example: DIR is an evaluation directory (judge DIR/quality, report
    DIR) whose record names the tagged inputs kept in DIR/inputs/<digest>/; a second run with the same
    inputs keeps the judgements; a run refused on a bad map leaves DIR as it was (issue 54)."""
    from abcde.examples import id_example_paths

    x = {k: str(v) for k, v in id_example_paths().items()}
    args = ["ids", "--history", x["history"], "--current", x["current"], "--base-ids", x["base_ids"],
            "--exp-ids", x["exp_ids"], "--items", x["items"], "--hide", "entity_id", "--budget", 120,
            "--sample-size", 100, "--out", tmp_path / "d"]
    r = CliRunner().invoke(main, [str(a) for a in [*args, "--json"]])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    counts = d["ids"]["counts"]
    assert counts["base"]["continuing"] == 0 and counts["base"]["new"] == d["ids"]["ids"] - counts["base"]["retired"]
    inputs = [p for p in (tmp_path / "d" / "inputs").iterdir()]
    assert len(inputs) == 1 and sorted(p.name for p in inputs[0].iterdir()) == sorted(
        ["base.parquet", "exp.parquet", "items.parquet", "id_table.parquet"])
    record = json.loads((tmp_path / "d" / "evaluate.json").read_text())
    assert record["inputs"]["base"]["path"] == str((inputs[0] / "base.parquet").resolve())
    tasks = pq.read_table(tmp_path / "d" / "quality" / "tasks.parquet").column_names
    assert "a_id_side" in tasks and not [c for c in tasks if "entity_id" in c or "source_item_id" in c]
    assert cli_ok("judge", "oracle", tmp_path / "d" / "quality", "--oracle-column", "entity_id")
    q = json.loads(CliRunner().invoke(main, ["report", str(tmp_path / "d"), "--json"]).stdout)["quality"]
    assert q["verdict_facts"]["recall"]["direction"] == "up", q["verdict"]
    # the answer read as ids (the pairs ask whether an id was kept for its concept)
    assert "Read as ids: Exp keeps more ids for the same concept (recall lift +" in q["verdict"]
    assert "hands no detectably more or fewer ids to another concept." in q["verdict"]
    # Again with the same inputs: the same sample, its judgements kept, one inputs directory.
    assert cli_ok(*args, "-q")
    assert [p.name for p in (tmp_path / "d" / "inputs").iterdir()] == [inputs[0].name]
    assert json.loads(CliRunner().invoke(main, ["quality", str(tmp_path / "d" / "quality"), "--json"]).stdout)[
        "judged_pairs"] == q["judged_pairs"]
    # The sample grows like any other (its inputs are the kept tagged files), and still speaks of ids.
    assert cli_ok("pairs", "--extend", tmp_path / "d" / "quality", "--budget", 160, "-q")
    assert cli_ok("judge", "oracle", tmp_path / "d" / "quality", "--oracle-column", "entity_id")
    out = CliRunner().invoke(main, ["quality", str(tmp_path / "d" / "quality")]).output
    assert "Read as ids: Exp keeps more ids for the same concept" in out
    # A refused run changes nothing.
    before = sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "d").rglob("*"))
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"cluster_id": ["nope"], "id": ["x"]}), bad)
    r = CliRunner().invoke(main, [str(a) for a in [*args[:8], bad, *args[9:]]])  # --exp-ids bad
    assert r.exit_code == 1 and "does not have" in r.output
    assert sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "d").rglob("*")) == before


def test_duckdb_and_spark_agree(tmp_path, spark):
    """``abcde ids`` on Spark (issue 54, "DuckDB and Spark agree"): the same id table (classes, owners,
    counts and row order; weights to 1e-12), the same tagged inputs kept as single Parquet files (the
    same rows in the same order, fingerprinted by the record, so the id table is found and checked
    again), the same impact numbers and the same pair sample for the same seed."""
    from abcde.examples import id_example_paths
    from abcde.workflow.ids import evaluate_ids, recorded_id_table
    from abcde.workflow.record import read_evaluation

    x = {k: str(v) for k, v in id_example_paths().items()}
    kw = dict(items=x["items"], hist_scale=1.5, hide=["entity_id"], budget=30, sample_size=30, seed=4)
    args = (x["history"], x["current"], x["base_ids"], x["exp_ids"])
    duck = evaluate_ids(*args, tmp_path / "duck", **kw)
    sp = evaluate_ids(*args, tmp_path / "spark", engine=spark, **kw)
    a, b = duck.ids.table, sp.ids.table
    assert a.schema.equals(b.schema) and a.num_rows == b.num_rows and sp.ids.counts == duck.ids.counts
    for c in a.column_names:
        if pa.types.is_floating(a.schema.field(c).type):  # sums added in another order: the last bits
            assert all(math.isclose(u, v, rel_tol=1e-12, abs_tol=1e-12)
                       for u, v in zip(a.column(c).to_pylist(), b.column(c).to_pylist())), c
        else:  # ids, owners, classes, and the order of the rows
            assert a.column(c).equals(b.column(c)), c
    for name in ("base", "exp", "items"):
        f = sp.inputs / f"{name}.parquet"
        assert f.is_file() and not list(sp.inputs.glob(".*"))  # one file; Spark's part files are gone
        d, s = pq.read_table(duck.inputs / f"{name}.parquet"), pq.read_table(f)
        assert d.column_names == s.column_names and all(d.column(c).equals(s.column(c)) for c in d.column_names)
    record = read_evaluation(tmp_path / "spark")
    assert record["engine"]["name"] == "spark" and record["inputs"]["base"]["fingerprint"]["sha256"]
    assert recorded_id_table(tmp_path / "spark", record).table.equals(b)
    i, j = duck.evaluation.impact.to_dict(), sp.evaluation.impact.to_dict()
    for k in ("items", "total_weight", "split_rate", "merge_rate", "jaccard_distance", "affected_items",
              "affected_weight"):
        assert j[k] == pytest.approx(i[k], rel=1e-12, abs=1e-12), k
    assert i["affected_items"] > 0 and j["affected_items"] == i["affected_items"]
    cols = ["item_a", "item_b", "class", "label", "pair_id", "stratum"]
    assert pq.read_table(sp.evaluation.pair_dir / "pairs.parquet").select(cols).equals(
        pq.read_table(duck.evaluation.pair_dir / "pairs.parquet").select(cols))
    cols = ["item_id", "draw_count"]
    assert pq.read_table(sp.evaluation.sample_path).select(cols).equals(
        pq.read_table(duck.evaluation.sample_path).select(cols))


def cli_ok(*args) -> bool:
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    return True


# --------------------------------------------------------------------------- the report and the judging page
def run_ids(world, root, *extra) -> tuple:
    """``abcde ids`` on the test world (its two maps written as files) into ``root/d``: (DIR, its --json)."""
    maps = {}
    for name, t in world["maps"].items():
        maps[name] = root / f"{name}.parquet"
        pq.write_table(t, maps[name])
    d = root / "d"
    r = CliRunner().invoke(main, [str(a) for a in [
        "ids", "--history", P["base"], "--current", P["exp"], "--base-ids", maps["fresh"], "--exp-ids", maps["inherit"],
        "--items", P["items"], "--hide", "entity_id", "--budget", 80, "--sample-size", 100, "--out", d, "--json",
        *extra]])
    assert r.exit_code == 0, r.output
    return d, json.loads(r.stdout)


@pytest.fixture(scope="module")
def evaluated(world, tmp_path_factory):
    return run_ids(world, tmp_path_factory.mktemp("ids-evaluated"))


def expected_ids(world) -> dict:
    """Each id's lineage under both schemes (``{id: {"base": …, "exp": …}}``, None where a scheme has
    none), from the definitions."""
    b, e = expected_lineage(world, "fresh"), expected_lineage(world, "inherit")
    return {k: {"base": b.get(k), "exp": e.get(k)} for k in b.keys() | e.keys()}


def class_of(x) -> str | None:
    return None if x is None else x["class"]


def id_section(html_text: str) -> str:
    m = re.search(r'<section id="ids">(.*?)</section>', html_text, re.S)
    assert m, "the report has no section for the id table"
    return m.group(1)


def shown_counts(section: str) -> dict:
    """The class counts the section shows, per scheme (each number as a person reads it, and its value)."""
    rows = re.findall(r'<tr data-class="(\w+)"><td>\1</td><td data-col="base" data-value="(\d+)">([\d,]+)</td>'
                      r'<td data-col="exp" data-value="(\d+)">([\d,]+)</td></tr>', section)
    for _, vb, tb, ve, te in rows:
        assert tb == f"{int(vb):,}" and te == f"{int(ve):,}"
    return {"base": {c: int(vb) for c, vb, _, _, _ in rows}, "exp": {c: int(ve) for c, _, _, ve, _ in rows}}


def shown_differing(section: str) -> list[dict]:
    """The rows of the section's table of ids whose class differs: {column: text shown}."""
    table = re.search(r'<table class="ids">.*?<tbody>(.*?)</tbody>', section, re.S).group(1)
    return [{k: html.unescape(v) for k, v in re.findall(r'<td data-col="(\w+)">(.*?)</td>', row)}
            for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table, re.S)]


def assert_the_id_section(world, html_text: str) -> dict:
    """The report's id section shows the class counts of both schemes, the ids whose class differs
    (the 20 with the most weight, their owners and overlap weights) and the construction, as computed
    here from the definitions; returns the counts shown."""
    want = expected_ids(world)
    section = id_section(html_text)
    counts = shown_counts(section)
    for s in ("base", "exp"):
        assert counts[s] == {c: sum(1 for v in want.values() if class_of(v[s]) == c) for c in CLASSES}
    differing = {k: v for k, v in want.items() if class_of(v["base"]) != class_of(v["exp"])}
    assert f"{len(want):,} ids" in section and f"the class of {len(differing):,} of them differs" in section
    rows = shown_differing(section)
    assert len(rows) == min(20, len(differing)) and len({r["id"] for r in rows}) == len(rows)
    for r in rows:
        v = differing[r["id"]]  # every id listed differs
        published = (v["base"] or v["exp"])["published"]
        assert_shows(r["hist_weight"], published, "published weight")
        for s, name in (("base", "Base"), ("exp", "Exp")):
            x = v[s]
            assert r[f"class_{s}"] == (x["class"] if x else "—")
            assert r[f"owner_{s}"] == ((x or {}).get("owner") or "—")
            for k in ("kept", "moved", "incoming"):
                assert_shows(r[f"{k}_{s}"], x[k] if x else 0.0, f"{name} {k}")
    # most weight first: the first listed holds the most published weight of all the ids that differ
    shown = [float(r["hist_weight"].replace(",", "")) for r in rows]
    assert shown == sorted(shown, reverse=True)
    assert shown[0] == pytest.approx(max((v["base"] or v["exp"])["published"] for v in differing.values()), abs=1e-6)
    # the construction, in a short paragraph
    text = html.unescape(re.sub(r"<[^>]+>", " ", section))
    for words in ("⟨h, x⟩", "⟨c, y⟩",
                  "Base puts ⟨h, x⟩ with every current item whose cluster got x's published id",
                  "is y the same real-world thing as x?", "ids kept for the same concept",
                  "ids not handed to another concept"):
        assert words in text, words
    return counts


def report_data(html_text: str) -> dict:
    return json.loads(re.search(r'id="report-data">(.*?)</script>', html_text, re.S).group(1)
                      .replace("\\u003c", "<").replace("\\u003e", ">").replace("\\u0026", "&"))


def test_the_report_of_abcde_ids_has_the_id_table_section(world, evaluated):
    """The report ``abcde ids`` writes (HTML and Markdown) has the id table's section: the class
    counts per scheme, equal to the id table's and to the counts computed here, the ids whose class
    differs with their owners and weights, and the construction in a paragraph (issue 54)."""
    d, out = evaluated
    page = (d / "report.html").read_text(encoding="utf-8")
    counts = assert_the_id_section(world, page)
    assert counts == out["ids"]["counts"]  # the IdTable's own
    data = report_data(page)["ids"]
    assert data["counts"] == counts and data["differing"] == out["ids"]["differing"]
    assert [r["id"] for r in data["top_differing"]] == [r["id"] for r in out["ids"]["top_differing"]]
    md = (d / "report.md").read_text(encoding="utf-8")
    assert f"Ids by lineage (exact): {out['ids']['ids']:,} ids" in md
    for c in CLASSES:
        assert f"| {c} | {counts['base'][c]:,} | {counts['exp'][c]:,} |" in md
    first = out["ids"]["top_differing"][0]
    assert re.search(rf"^\| {re.escape(first['id'])} \| ", md, re.M)
    assert "Base puts ⟨h, x⟩ with every current item" in md


def test_abcde_report_dir_rebuilds_the_section_from_the_checked_id_table(world, tmp_path):
    """``abcde report DIR`` rebuilds the id table's section (with the verdict read as ids once judged)
    from the id table kept beside the tagged inputs, which it checks against the record's
    fingerprints of them: a changed or missing id table is refused in one line, the report untouched."""
    d, out = run_ids(world, tmp_path)
    assert cli_ok("judge", "oracle", d / "quality", "--oracle-column", "entity_id")
    for f in ("report.html", "report.md"):
        (d / f).unlink()  # rebuilt from the record and the kept files alone
    r = CliRunner().invoke(main, ["report", str(d), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["ids"]["counts"] == out["ids"]["counts"]
    page = (d / "report.html").read_text(encoding="utf-8")
    assert assert_the_id_section(world, page) == out["ids"]["counts"]
    assert "Read as ids: Exp keeps more ids for the same concept" in page
    assert "Ids by lineage (exact)" in (d / "report.md").read_text(encoding="utf-8")
    # The id table is the one written with the fingerprinted tagged inputs, or nothing is rebuilt.
    table_file = next((d / "inputs").iterdir()) / "id_table.parquet"
    good, before = table_file.read_bytes(), (d / "report.html").read_bytes()
    try:
        t = pq.read_table(table_file)
        k = t.column_names.index("class_exp")
        classes = t.column("class_exp").to_pylist()
        classes[0] = "split" if classes[0] != "split" else "merged"
        pq.write_table(t.set_column(k, "class_exp", pa.array(classes, pa.string())), table_file)
        r = CliRunner().invoke(main, ["report", str(d)])
        assert r.exit_code == 1 and "is not the one 'abcde ids' wrote" in r.output and "changed since" in r.output
        table_file.unlink()
        r = CliRunner().invoke(main, ["report", str(d)])
        assert r.exit_code == 1 and "does not exist any more" in r.output, r.output
        assert (d / "report.html").read_bytes() == before
    finally:
        table_file.write_bytes(good)
    assert cli_ok("report", d, "-q")


def test_the_judging_page_asks_for_the_same_real_world_thing_and_shows_each_items_side(evaluated, tmp_path, page):
    """The pair page of an ids sample (the real judging server, in a real browser) asks "the same
    real-world thing?" and shows each item's side of time, "published earlier" or "current", in its
    own row (as the tagged items carry it), never which scheme; a judgement opened again asks the same."""
    from judging_helpers import fresh_copy, request

    from abcde.web.judging_server import serve

    d, _ = evaluated
    q = fresh_copy(d / "quality", tmp_path)
    tasks = {t["pair_id"]: t for t in pq.read_table(q / "tasks.parquet").to_pylist()}
    srv = serve(q).start()
    try:
        page.goto(srv.url + "?rater=ann")
        page.wait_for_selector("#pair-body tr")
        assert page.inner_text("#judge-title") == "Do these two items refer to the same real-world thing?"
        assert "side of time" in page.inner_text(".help")
        seen = []
        for k in range(3):
            pid = page.get_attribute("#pair", "data-pair-id")
            t = tasks[pid]
            assert page.is_visible("#sides") and page.inner_text("#sides th") == "side of time"
            assert [page.inner_text("#side-a"), page.inner_text("#side-b")] == [t["a_id_side"], t["b_id_side"]]
            assert {t["a_id_side"], t["b_id_side"]} <= {"published earlier", "current"}
            names = page.locator("#pair-body th").all_inner_texts()
            assert "id_side" not in names and "given_name" in names  # the side is not an attribute to compare
            assert not re.search(r"\b(base|exp|scheme|cluster|split|merged?)\b", page.inner_text("#judge"), re.I)
            seen.append(pid)
            page.keyboard.press("s")
            page.wait_for_selector(f"body[data-acks='{k + 1}']")
        assert "published earlier" in {tasks[p][f"{x}_id_side"] for p in seen for x in "ab"}
        page.wait_for_selector("body[data-mine='3']")
        page.click(f"#mine-body tr[data-pair-id='{seen[0]}'] button.open-pair")
        page.wait_for_selector(f"body[data-reviewing='{seen[0]}']")
        assert page.inner_text("#judge-title") == ("Your judgement #1: do these two items refer to the same "
                                                   "real-world thing?")
        t = tasks[seen[0]]
        assert [page.inner_text("#side-a"), page.inner_text("#side-b")] == [t["a_id_side"], t["b_id_side"]]
        # the owner's settle page shows the pair the same way (one pair table)
        code, body = request(srv.url, "GET", "/settle")
        assert code == 200 and 'data-side-column="id_side"' in body and "<th>side of time</th>" in body
        assert page.errors == [] and page.blocked == []
    finally:
        srv.shutdown()


def test_other_samples_judging_pages_ask_as_before(tmp_path, page):
    """A sample that is not about ids: the same question as ever, and no side of time."""
    from judging_helpers import request

    from abcde.quality import draw_pair_sample
    from abcde.web.judging_server import serve

    d = tmp_path / "pairs"
    draw_pair_sample(P["base"], P["exp"], d, items=P["items"], budget=20, seed=1, hide=["entity_id"])
    srv = serve(d).start()
    try:
        page.goto(srv.url + "?rater=ann")
        page.wait_for_selector("#pair-body tr")
        assert page.inner_text("#judge-title") == "Do these two items refer to the same thing?"
        assert page.locator("#sides").count() == 0 and "side of time" not in page.inner_text("body")
        for path in ("/", "/settle"):
            code, body = request(srv.url, "GET", path)
            assert code == 200 and "data-question" not in body and "real-world" not in body
        assert page.errors == [] and page.blocked == []
    finally:
        srv.shutdown()
