"""The three ways :func:`abcde.core.diff.build_diff` joins the inputs (issue 16, item 3) give the
same diff: zipped by row position (inputs in the same row order, verified row by row), one hash
join, and, for large inputs in other orders, hash joins one bucket of Base clusters at a time
(restricted items found in buckets of ids).
Each path also refuses what the others refuse (duplicate ids) and reports the same restriction."""

from __future__ import annotations

import json
import os
import math
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import abcde
from abcde.core import diff as core_diff
from abcde.engine.base import Engine
from abcde.errors import EngineError, InputError
from abcde.examples import example_paths
from content import assert_same_content

P = example_paths("febrl3")
KEYS = ("items", "total_weight", "split_rate", "merge_rate", "jaccard_distance", "affected_items",
        "affected_weight", "restriction", "slices", "top_clusters")


@pytest.fixture
def zips(monkeypatch):
    """How often build_diff zipped the inputs (and used the result), by wrapping _zip."""
    got = []
    original = core_diff._zip

    def spy(eng, loaded):
        z = original(eng, loaded)
        got.append(z is not None)
        return z

    monkeypatch.setattr(core_diff, "_zip", spy)
    return got


def parts_written(monkeypatch, eng: Engine) -> list[tuple[str, int]]:
    """What ``eng`` writes in parts (:meth:`Engine.materialize_parts`): ``(step, parts)`` in order."""
    stems = []
    original = type(eng).materialize_parts

    def spy(self, exprs, stem):
        stems.append((stem, len(exprs)))
        return original(self, exprs, stem)

    monkeypatch.setattr(type(eng), "materialize_parts", spy)
    return stems


def reordered(tmp_path, name, table, order):
    path = tmp_path / f"{name}.parquet"
    pq.write_table(table.take(pa.array(order)), path)
    return path


def same(a: dict, b: dict):
    for k in KEYS:
        assert_same_content(a[k], b[k], k)


def run(base, exp, items, **kw):
    return abcde.impact(base, exp, items=items, slice_by=["source"], top=8, **kw).to_dict()


def test_aligned_inputs_are_zipped_and_give_the_hash_join_numbers(tmp_path, zips):
    b, e, it = (pq.read_table(P[k]) for k in ("base", "exp", "items"))
    n = b.num_rows
    zipped = run(P["base"], P["exp"], P["items"])
    assert zips == [True]
    # The same data with Exp in another row order: the probe of the first rows sees it, no zip.
    rev = list(range(n))[::-1]
    hashed = run(P["base"], reordered(tmp_path, "exp", e, rev), P["items"])
    assert zips == [True, False]
    same(zipped, hashed)
    # All three in one other order: zipped again, same numbers.
    perm = [(k * 7919) % n for k in range(n)]
    assert math.gcd(7919, n) == 1
    again = run(reordered(tmp_path, "b2", b, perm), reordered(tmp_path, "e2", e, perm),
                reordered(tmp_path, "i2", it, perm))
    assert zips[-1] is True
    same(zipped, again)


def make_large(monkeypatch):
    """Make the bundled example (5,005 rows at most) "large": the billion-item steps, in buckets."""
    for name, rows in (("LARGE_ROWS", 1_000), ("FRAGMENT_PARTITION_ROWS", 1_500), ("JOIN_PARTITION_ROWS", 1_300),
                       ("UNIQUE_CHECK_ROWS", 1_300), ("JOIN_BUILD_ROWS", 1_300)):
        monkeypatch.setattr(core_diff, name, rows)


@pytest.mark.parametrize("as_large", [False, True])
def test_inputs_that_diverge_after_the_probe_are_joined_by_id(tmp_path, zips, capsys, monkeypatch, as_large):
    """Same length, same first rows, then a different order: the row-by-row check of the zip
    finds it, the diff is built by id, and the numbers are the hash join's."""
    expected = run(P["base"], P["exp"], P["items"])
    zips.clear()
    if as_large:
        make_large(monkeypatch)
    monkeypatch.setattr(core_diff, "ZIP_PROBE_ROWS", 100)
    e = pq.read_table(P["exp"])
    n = e.num_rows
    order = list(range(200)) + list(range(200, n))[::-1]
    monkeypatch.setenv("ABCDE_PROGRESS", "1")
    got = run(P["base"], reordered(tmp_path, "exp", e, order), P["items"])
    assert zips == [True]  # zipped, then found out
    assert "differ further on: joining them by item id instead" in capsys.readouterr().err
    same(expected, got)


def test_zipped_inputs_with_a_duplicate_id_are_refused_naming_it(tmp_path, zips, monkeypatch):
    b, e, it = (pq.read_table(P[k]) for k in ("base", "exp", "items"))
    # Row 4000 repeats row 3000's id in all three inputs (so they still agree row by row).
    dup = b.column("item_id")[3000].as_py()

    def with_dup(t):
        ids = t.column("item_id").to_pylist()
        ids[4000] = dup
        return t.set_column(t.column_names.index("item_id"), "item_id", pa.array(ids))

    paths = [reordered(tmp_path, k, with_dup(t), range(t.num_rows)) for k, t in (("b", b), ("e", e), ("i", it))]
    with pytest.raises(InputError, match=f"1 item ids appear in more than one row of base file.*{dup}"):
        abcde.impact(*paths[:2], items=paths[2])  # one distinct count
    make_large(monkeypatch)  # four buckets of ids, fragments written in parts
    with pytest.raises(InputError, match=f"1 item ids appear in more than one row of base file.*{dup}"):
        abcde.impact(*paths[:2], items=paths[2])
    assert zips == [True, True]


@pytest.mark.parametrize("engine", ["duckdb", "spark"])
def test_a_join_in_buckets_gives_the_one_join_numbers(tmp_path, monkeypatch, engine, request):
    """Inputs in different orders, with items only in Base, only in Exp and only in the items
    table: large inputs are joined in 4 buckets of Base clusters for the fragments, and the
    restricted items read once from joins in 4 buckets of ids; the diff (numbers, restriction,
    examples) is the one hash join's; the scratch parts are removed when no longer read."""
    b, e, it = (pq.read_table(P[k]) for k in ("base", "exp", "items"))
    n = b.num_rows
    b = b.slice(0, n - 40)                      # 40 items only in Exp and the items table
    e = e.take(pa.array([(k * 7919) % n for k in range(n)])).filter(
        pa.array([k % 97 != 0 for k in range(n)]))  # some only in Base
    it = it.slice(20)                            # ... and 20 items with no items row: refused, so
    ok = pq.read_table(P["items"])               # keep every item but add 5 rows of no clustering
    extra = ok.slice(0, 5).set_column(0, "item_id", pa.array([f"orphan-{k}" for k in range(5)]))
    it = pa.concat_tables([ok, extra.cast(ok.schema)])
    paths = [reordered(tmp_path, k, t, range(t.num_rows)) for k, t in (("b", b), ("e", e), ("i", it))]
    eng = abcde.connect(engine) if engine == "duckdb" else request.getfixturevalue("spark")
    one = run(*paths, engine=eng)
    assert one["restriction"]["base_only_items"] > 0 and one["restriction"]["exp_only_items"] == 40
    assert one["restriction"]["items_only_items"] == 5
    eng2 = abcde.connect(engine, temp_directory=tmp_path / "spill") if engine == "duckdb" else eng
    stems = parts_written(monkeypatch, eng2)  # DuckDB writes each bucket as a part; Spark partitions itself
    for name, rows in (("LARGE_ROWS", 1_000), ("JOIN_PARTITION_ROWS", 1_300), ("JOIN_BUILD_ROWS", 1_300)):
        monkeypatch.setattr(core_diff, name, rows)  # the largest input: 5,005 rows; Base 4,960
    parts = run(*paths, engine=eng2)
    if engine == "duckdb":
        assert stems[:2] == [("fragments", 4), ("restricted items", 4)], stems
    else:
        assert stems == [], stems
    same(one, parts)
    if engine == "duckdb":  # the scratch parts are removed as soon as read, the last with the engine
        scratch = [h[1] for h in eng2._temp if isinstance(h, tuple) and h[0] == "dir"]
        assert len(scratch) == 1 and len(list(Path(scratch[0]).glob("part-*.parquet"))) == 1
        made = Path(scratch[0]).parent
        assert made == tmp_path / "spill"  # where DuckDB spills: --temp-directory
        eng2.release()
        assert not Path(scratch[0]).exists() and not list(made.glob("abcde-scratch-*"))


@pytest.mark.parametrize("order", ["aligned", "reordered", "restricted"])
def test_large_inputs_without_an_items_table_give_the_one_join_numbers(tmp_path, monkeypatch, order):
    """No items table (every weight 1), on each large path: zipped, in other orders holding the same
    items, in other orders with items only in Base. The numbers are the one join's to 1e-9 (a
    weight of 1 once summed as a DECIMAL and came back rounded to 6 digits); an Exp repeating an
    id is refused naming it."""
    e = pq.read_table(P["exp"])
    n = e.num_rows
    keep = [k for k in range(n) if order != "restricted" or k % 53]
    exp = P["exp"] if order == "aligned" else reordered(tmp_path, "exp", e, [(k * 7919) % n for k in keep])
    one = abcde.impact(P["base"], exp, top=8).to_dict()
    make_large(monkeypatch)
    big = abcde.impact(P["base"], exp, top=8).to_dict()
    assert (big["restriction"]["base_only_items"] > 0) == (order == "restricted")
    for k in KEYS:
        if k != "slices":
            assert_same_content(one[k], big[k], k)
    assert big["jaccard_distance"] == pytest.approx(one["jaccard_distance"], rel=1e-12)
    if order != "aligned":
        ids = e.column("item_id").to_pylist()
        twice = e.set_column(0, "item_id", pa.array([ids[1] if k == 7 else v for k, v in enumerate(ids)]))
        exp2 = reordered(tmp_path, "exp2", twice, [(k * 7919) % n for k in keep])
        with pytest.raises(InputError, match=f"1 item ids appear in more than one row of exp file.*{ids[1]}"):
            abcde.impact(P["base"], exp2)


def test_a_duplicate_id_is_refused_in_a_join_in_buckets(tmp_path, monkeypatch):
    b = pq.read_table(P["base"])
    ids = b.column("item_id").to_pylist()
    rev = list(range(b.num_rows))[::-1]
    dup = pa.table({"item_id": [ids[10]], "cluster_id": ["another cluster"]})
    base = reordered(tmp_path, "b", pa.concat_tables([b, dup.cast(b.schema)]), list(range(b.num_rows + 1)))
    exp = reordered(tmp_path, "e", pq.read_table(P["exp"]), rev)
    make_large(monkeypatch)  # joined in 4 buckets of Base clusters, then of ids
    with pytest.raises(InputError, match=f"1 item ids appear in more than one row of base file.*{ids[10]}.*two or more"):
        abcde.impact(base, exp, items=P["items"])


def test_lack_of_disk_or_memory_is_one_line_naming_the_step_limit_and_what_to_set(tmp_path):
    eng = abcde.connect(memory_limit="3GB", temp_directory=tmp_path / "spill")
    msg = eng.failure("fragments_all", OSError("IO Error: Could not write file \"x.tmp\": No space left on device\n"
                                               "more detail"))
    assert "\n" not in msg and "Step 'fragments_all' failed in duckdb" in msg
    assert f"{tmp_path / 'spill'} is full" in msg and "--temp-directory" in msg and "--engine spark" in msg
    msg = eng.failure("fragments", RuntimeError("Out of Memory Error: could not allocate block of size 256 KiB "
                                                "(2.7 GiB/3.0 GiB used)"))
    assert "memory limit 3GB" in msg and "--memory-limit" in msg and "--engine spark" in msg
    # For real: a memory limit DuckDB cannot work in, and nowhere to spill.
    tight = abcde.connect(memory_limit="8MB", temp_directory=tmp_path / "nowhere" / "x")
    (tmp_path / "nowhere").write_text("a file, so nothing can be made below it")
    with pytest.raises(EngineError) as caught:
        abcde.impact(P["base"], P["exp"], items=P["items"], engine=tight)
    text = str(caught.value)
    assert "\n" not in text and text.startswith("Step '")


@pytest.mark.parametrize("aligned, shared_fit", [(True, True), (False, True), (True, False)])
def test_large_inputs_built_in_buckets_give_the_same_job(tmp_path, monkeypatch, aligned, shared_fit):
    """Inputs "large" for one machine (thresholds lowered to this example's size): the restriction
    from per-membership totals, the fragments' cluster totals in buckets of Base then Exp clusters
    (the clusters of several fragments joined back in one pass, or, when those do not fit one hash
    join, window sums, one pass per side), written as Parquet parts. The whole job — impact numbers,
    per-item and per-cluster tables, exploration sample, pair sample — is the one built in memory."""
    from abcde.workflow.evaluate import evaluate

    e = pq.read_table(P["exp"])
    n = e.num_rows
    exp = P["exp"] if aligned else reordered(tmp_path, "exp", e.filter(pa.array([k % 53 != 0 for k in range(n)])),
                                             [(k * 7919) % (n - n // 53 - 1) for k in range(n - n // 53 - 1)])
    kw = dict(items=P["items"], slice_by=["source"], budget=60, sample_size=200, seed=3, hide=["entity_id"])
    small = evaluate(P["base"], exp, tmp_path / "small", **kw)
    make_large(monkeypatch)
    if not shared_fit:  # (aligned inputs are zipped: no join of Base buckets)
        monkeypatch.setattr(core_diff, "JOIN_BUILD_ROWS", 10)
    eng = abcde.connect()
    stems = parts_written(monkeypatch, eng)
    large = evaluate(P["base"], exp, tmp_path / "large", engine=eng, **kw)
    # Joined in buckets of Base clusters, each bucket's fragments get their Base totals in the pass
    # that groups them; zipped, the fragments are grouped at once and get both totals in buckets.
    passes = [("fragments", 1)] if aligned else [("fragments", 4), ("restricted items", 4)]
    sides = ["Base", "Exp"] if aligned else ["Exp"]
    shared = [(f"fragments: {s} clusters of several fragments", 2) for s in sides]
    if shared_fit:
        passes += shared + [("fragments: cluster totals", 1)]
    else:
        passes += shared + [(f"fragments: {s} cluster totals", 2) for s in sides]
    assert stems == passes, stems
    a, b = small.impact.to_dict(), large.impact.to_dict()
    if not aligned:
        assert a["restriction"]["base_only_items"] > 0
    same(a, b)
    for f in ("items.parquet", "base_clusters.parquet", "exp_clusters.parquet"):
        key = "item_id" if f == "items.parquet" else "cluster_id"
        x, y = (pq.read_table(d / "impact" / f).sort_by(key) for d in (tmp_path / "small", tmp_path / "large"))
        assert x.num_rows == y.num_rows and x.column(key).equals(y.column(key)), f
        for c in x.column_names:
            if pa.types.is_floating(x.schema.field(c).type):
                assert x.column(c).to_pylist() == pytest.approx(y.column(c).to_pylist(), rel=1e-9, abs=1e-12), (f, c)
            else:
                assert x.column(c).equals(y.column(c)), (f, c)
    # The report's neighbourhoods of the top clusters: the same fragments and members (read, for
    # large inputs in other orders, from the inputs joined for those fragments only).
    x, y = (report_data(d / "report.html") for d in (tmp_path / "small", tmp_path / "large"))
    assert x["neighbourhoods"]["base"] and x["neighbourhoods"]["exp"]
    assert_same_content(x["neighbourhoods"], y["neighbourhoods"], "neighbourhoods")
    cols = ["item_id", "draw_count"]
    assert pq.read_table(small.sample_path).select(cols).equals(pq.read_table(large.sample_path).select(cols))
    dcols = ["item_a", "item_b", "class", "label", "pair_id", "stratum"]
    assert pq.read_table(small.pair_dir / "pairs.parquet").select(dcols).equals(
        pq.read_table(large.pair_dir / "pairs.parquet").select(dcols))
    eng.release()


def report_data(path: Path) -> dict:
    text = path.read_text()
    start = text.index('<script type="application/json" id="report-data">')
    body = text[text.index(">", start) + 1:text.index("</script>", start)]
    return json.loads(body)


def test_large_inputs_in_other_orders_holding_the_same_items_need_no_join_by_id(tmp_path, monkeypatch):
    """Exp and the items table in other row orders, every item in all three inputs once: the
    fragments in buckets of Base clusters and each input's distinct ids prove that nothing is
    restricted, with no join in buckets of ids; the numbers are the one join's. An Exp repeating
    one id in place of another has the same row counts (and the same joined rows): its distinct
    ids catch it, and the refusal names the id."""
    e, it = pq.read_table(P["exp"]), pq.read_table(P["items"])
    n = e.num_rows
    exp = reordered(tmp_path, "exp", e, [(k * 7919) % n for k in range(n)])
    items = reordered(tmp_path, "items", it, [(k * 4099) % n for k in range(n)])
    one = run(P["base"], exp, items)
    make_large(monkeypatch)
    eng = abcde.connect()
    stems = parts_written(monkeypatch, eng)
    big = run(P["base"], exp, items, engine=eng)
    assert stems == [("fragments", 4), ("fragments: Exp clusters of several fragments", 2),
                     ("fragments: cluster totals", 1)], stems
    assert big["restriction"]["common_items"] == n and not any(
        v for k, v in big["restriction"].items() if k != "common_items")
    same(one, big)
    ids = e.column("item_id").to_pylist()
    twice = e.set_column(0, "item_id", pa.array([ids[0] if k == 7 else v for k, v in enumerate(ids)]))
    exp2 = reordered(tmp_path, "exp2", twice, [(k * 7919) % n for k in range(n)])
    with pytest.raises(InputError, match=f"1 item ids appear in more than one row of exp file.*{ids[0]}"):
        abcde.impact(P["base"], exp2, items=items, engine=eng)
    eng.release()


def test_only_affected_tables_are_the_affected_rows_of_the_whole_tables(tmp_path):
    from click.testing import CliRunner

    from abcde.cli import main

    inputs = ["--base", str(P["base"]), "--exp", str(P["exp"]), "--items", str(P["items"]), "-q"]
    r = CliRunner()
    assert r.invoke(main, ["impact", *inputs, "--out", str(tmp_path / "all")]).exit_code == 0
    got = r.invoke(main, ["impact", *inputs, "--out", str(tmp_path / "aff"), "--only-affected"])
    assert got.exit_code == 0, got.output
    meta = json.loads((tmp_path / "aff" / "impact.json").read_text())
    assert meta["tables"] == "affected" and json.loads((tmp_path / "all" / "impact.json").read_text())["tables"] == "all"
    items = pq.read_table(tmp_path / "all" / "items.parquet")
    aff = pq.read_table(tmp_path / "aff" / "items.parquet").sort_by("item_id")
    assert aff.num_rows == meta["affected_items"] > 0
    moved = items.filter(pc.or_(pc.greater(items["split_rate"], 0), pc.greater(items["merge_rate"], 0))).sort_by("item_id")
    assert_same_content(aff.to_pylist(), moved.select(aff.column_names).to_pylist(), "items")
    for side in ("base", "exp"):
        whole = pq.read_table(tmp_path / "all" / f"{side}_clusters.parquet")
        part = pq.read_table(tmp_path / "aff" / f"{side}_clusters.parquet").sort_by("cluster_id")
        expected = whole.filter(pc.greater(whole["jaccard_distance"], 0)).sort_by("cluster_id")
        assert part.num_rows == expected.num_rows > 0, side
        assert_same_content(part.to_pylist(), expected.select(part.column_names).to_pylist(), side)
    bad = r.invoke(main, ["impact", *inputs, "--only-affected"])
    assert bad.exit_code != 0 and "--only-affected applies to the tables written with --out" in bad.output


def test_spill_left_by_killed_runs_is_removed_at_the_next_start(tmp_path, monkeypatch):
    """A killed run leaves DuckDB's spill and abcde's scratch parts in the default spill directory;
    the next engine opened there removes those of processes no longer running, never a live one's."""
    import subprocess
    import sys
    import tempfile

    from abcde.engine.duckdb import SPILL_DIR

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    spill = tmp_path / SPILL_DIR
    spill.mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    stale = [spill / f"duckdb_temp_{dead}_0_storage_DEFAULT-0.tmp", spill / f"duckdb_temp_{dead}_0_owner"]
    for f in stale:
        f.write_bytes(b"x" * 10)
    (spill / f"abcde-scratch-{dead}-ab12").mkdir()
    (spill / f"abcde-scratch-{dead}-ab12" / "part-00000.parquet").write_bytes(b"x")
    live = [spill / f"duckdb_temp_{os.getpid()}_0_owner", spill / "someone-elses.txt"]
    for f in live:
        f.write_text("mine")
    eng = abcde.connect()
    assert eng.settings["temp_directory"] == str(spill)
    assert sorted(p.name for p in spill.iterdir()) == sorted(p.name for p in live)


def test_a_query_reading_a_zip_keeps_its_join_sides_and_others_are_left_alone(monkeypatch):
    """DuckDB estimates a positional join at 0 rows and would build its hash tables on the zipped
    billion rows: a query that reads a zip runs with the build-side optimizer off (found from the
    expression's tables), and only that query."""
    from abcde.core.inputs import Inputs

    eng = abcde.connect()
    loaded, _ = core_diff._load(eng, Inputs(base=P["base"], exp=P["exp"]), ("base", "exp"))
    z = core_diff._zip(eng, loaded)
    assert z is not None
    said = []
    raw = eng.con.raw_sql
    monkeypatch.setattr(eng.con, "raw_sql", lambda q, *a, **kw: (said.append(str(q)), raw(q, *a, **kw))[1])
    small = loaded["exp"].table.limit(10)
    other = small.rename(other="item_id")
    joined = z.join(other, z.item_id == other.other)
    assert len(eng.rows(joined.select("item_id"), step="zip join")) == 10
    assert said == ["SET disabled_optimizers = 'build_side_probe_side'", "RESET disabled_optimizers"]
    said.clear()
    assert len(eng.rows(small, step="no zip")) == 10
    assert said == []
    eng.release()


def test_bucket_sizes_follow_the_memory_limit(tmp_path, monkeypatch):
    """Large inputs in other row orders are joined in buckets of Base clusters sized by the engine's
    memory limit (issue 28): twice the memory, about half the buckets (fewer scans of Exp and the
    items table), and the numbers of the one hash join whatever the count."""
    e = pq.read_table(P["exp"])
    n = e.num_rows
    exp = reordered(tmp_path, "exp", e, [(k * 7919) % n for k in range(n)])
    one = run(P["base"], exp, P["items"])

    def sizes():  # sizes "measured" at 1 GiB: 1,300 Base rows per bucket (5,000 Base rows: 4 buckets)
        monkeypatch.setattr(core_diff, "LARGE_ROWS", 1_000)
        monkeypatch.setattr(core_diff, "MEASURED_MEMORY", 2**30)
        monkeypatch.setitem(core_diff.MEASURED_ROWS, "join_build_rows", 1_300)

    buckets = {}
    for limit in ("1GB", "2GB"):  # DuckDB: 953.6 MiB (1,210 rows: 5 buckets) and 1.8 GiB (2,340: 3)
        sizes()
        eng = abcde.connect(memory_limit=limit)
        stems = parts_written(monkeypatch, eng)
        same(one, run(P["base"], exp, P["items"], engine=eng))
        buckets[limit] = dict(stems)["fragments"]
        monkeypatch.undo()  # the spy on the engine class, before the next one
    assert buckets == {"1GB": 5, "2GB": 3}
    # A size that is set is used as it is, whatever the memory.
    sizes()
    monkeypatch.setattr(core_diff, "JOIN_BUILD_ROWS", 2_500)
    assert core_diff._sizes(abcde.connect(memory_limit="1GB")).join_build_rows == 2_500


def test_sizes_without_a_memory_limit_and_beyond_the_ram(monkeypatch):
    """An engine that does not say its memory (Spark: it partitions itself) gets the measured sizes;
    never below a tenth of them; DuckDB's limit beyond the machine's RAM counts as the RAM."""
    from abcde.engine.duckdb import memory_size

    class Unsaid:
        memory_bytes = None

    assert core_diff._sizes(Unsaid()).join_build_rows == core_diff.MEASURED_ROWS["join_build_rows"]
    tiny = abcde.connect(memory_limit="100MB")
    assert core_diff._sizes(tiny).join_build_rows == core_diff.MEASURED_ROWS["join_build_rows"] // 10
    measured = abcde.connect(memory_limit="14GB")
    if measured.memory_bytes == core_diff.MEASURED_MEMORY:  # a machine of more than 14 GB of RAM
        assert core_diff._sizes(measured).join_build_rows == core_diff.MEASURED_ROWS["join_build_rows"]
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert abcde.connect(memory_limit=f"{4 * ram // 10**9}GB").memory_bytes == ram
    assert [memory_size(t) for t in ("13.0 GiB", "953.6 MiB", "500MB", "2 TB", "1.5KiB", "lots", "")] == \
        [13 * 2**30, int(953.6 * 2**20), 500 * 10**6, 2 * 10**12, 1536, None, None]
