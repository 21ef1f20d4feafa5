"""The same computations on every engine: DuckDB (default) and PySpark (local[2]).

One Spark session serves the whole test run. Each test here runs on both engines
against the slow reference, and the cross-engine tests check that DuckDB and Spark
give the same metrics (to 1e-9) and the *same* sampled items and pairs for a seed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from test_impact_reference import (
    METRICS,
    assert_per_cluster,
    assert_per_item,
    assert_rows_match,
    assert_top,
    by_key,
    close,
)

from content import assert_same_content
import abcde
import ibis
import reference as ref
from abcde.cli import main
from abcde.errors import MissingDependencyError
from abcde.sampling.explore import sample_affected
from abcde.core.diff import build_diff
from abcde.core.inputs import Inputs
from abcde.metrics.impact import overall
from abcde.sampling.pairs import pair_counts, sample_pairs
from abcde.sampling.allocation import STRATA
from abcde.sampling.stratified import sample_stratified, sample_stratified_many, slice_self_terms

EXAMPLE = Path(abcde.__file__).parent / "examples" / "febrl3"


@pytest.fixture(params=["duckdb", "spark"])
def engine(request):
    if request.param == "spark":
        return request.getfixturevalue("spark")
    return abcde.connect()


def world(seed=0, n=240):
    """Base and Exp over partly different items (restriction), string ids, an items
    table with weights, an attribute and an item in neither clustering."""
    rng = np.random.default_rng(seed)
    ids = [f"i{k:04d}" for k in range(n)]
    base_c = rng.integers(0, n // 4, n)
    exp_c = np.where(rng.random(n) < 0.3, rng.integers(0, n // 4, n), base_c)
    exp_c = np.where(rng.random(n) < 0.1, base_c + 1, exp_c)
    in_base, in_exp = rng.random(n) < 0.95, rng.random(n) < 0.95
    base = {i: f"b{c}" for i, c, k in zip(ids, base_c, in_base) if k}
    exp = {i: f"e{c}" for i, c, k in zip(ids, exp_c, in_exp) if k}
    w = {i: float(x) for i, x in zip(ids + ["zz-only-items"], rng.lognormal(0, 0.7, n + 1))}
    kind = {i: str(rng.choice(["web", "wiki", "news"])) for i in w}
    return base, exp, w, kind


def tables(base, exp, w, kind):
    return (pa.table({"item_id": list(base), "cluster_id": list(base.values())}),
            pa.table({"item_id": list(exp), "cluster_id": list(exp.values())}),
            pa.table({"item_id": list(w), "weight": list(w.values()), "kind": [kind[i] for i in w]}))


def test_impact_matches_reference_at_every_level(engine):
    base, exp, w, kind = world()
    b_t, e_t, i_t = tables(base, exp, w, kind)
    res = abcde.impact(b_t, e_t, items=i_t, slice_by=["kind"], top=5, engine=engine)
    b, e, info = ref.restrict(base, exp, w, items=w)
    r = res.restriction
    assert (r.common_items, r.base_only_items, r.exp_only_items, r.items_only_items) == (
        info["items"], info["base_only_items"], info["exp_only_items"], info["items_only_items"])
    assert r.base_only_weight == close(info["base_only_weight"])
    assert r.exp_only_weight == close(info["exp_only_weight"])
    ww = {i: w[i] for i in b}
    o = ref.overall(b, e, ww)
    assert res.items == o["items"] and res.affected_items == o["affected_items"]
    for m in METRICS:
        assert getattr(res, m) == close(o[m]), m
    assert_per_item(res, b, e, ww)
    assert_per_cluster(res, b, e, ww)
    assert_top(res, b, e, ww, 5)
    want = ref.per_slice(b, e, ww, {i: kind[i] for i in b})
    assert_rows_match(by_key(pa.Table.from_pylist(res.slices["kind"]), "kind"), want,
                      ("items", "weight") + METRICS + ("contribution",), "slices")
    assert res.lookup(["i0003"])[0]["jaccard_distance"] == close(ref.per_item(b, e, ww)["i0003"]["jaccard_distance"])


def _febrl(engine, **kw):
    return abcde.impact(EXAMPLE / "base.parquet", EXAMPLE / "exp.parquet", items=EXAMPLE / "items.parquet",
                        engine=engine, **kw)


def _rows_close(a: pa.Table, b: pa.Table, key):
    ra, rb = by_key(a, key), by_key(b, key)
    assert set(ra) == set(rb)
    for k, row in ra.items():
        for c, v in row.items():
            if isinstance(v, float):
                assert rb[k][c] == pytest.approx(v, abs=1e-9, rel=1e-9), (k, c)
            else:
                assert rb[k][c] == v, (k, c)


@pytest.fixture(scope="module")
def febrl_on_both(spark):
    """The example's impact (sliced by source, top 10) on DuckDB and on Spark: computed once for the
    two tests that compare them (the numbers and tables, and the reports built from them)."""
    return _febrl(abcde.connect(), slice_by=["source"], top=10), _febrl(spark, slice_by=["source"], top=10)


def test_duckdb_and_spark_agree_on_the_example_data(spark, febrl_on_both):
    d, s = febrl_on_both
    for k, v in d.to_dict().items():
        if isinstance(v, float):
            assert s.to_dict()[k] == pytest.approx(v, abs=1e-9, rel=1e-9), k
    assert s.restriction == d.restriction
    _rows_close(d.per_item(), s.per_item(), "item_id")
    for side in ("base", "exp"):
        _rows_close(d.per_cluster(side), s.per_cluster(side), "cluster_id")
    for key in ("base", "exp", "interleaved"):
        assert [(r["side"], r["cluster_id"]) for r in s.top_clusters[key]] == [
            (r["side"], r["cluster_id"]) for r in d.top_clusters[key]], key
    _rows_close(pa.Table.from_pylist(d.slices["source"]), pa.Table.from_pylist(s.slices["source"]), "source")
    # Without an items table every weight is the literal 1.0 (Spark once did decimal arithmetic on it).
    d1, s1 = (abcde.impact(EXAMPLE / "base.parquet", EXAMPLE / "exp.parquet", engine=e) for e in (abcde.connect(), spark))
    for m in METRICS:
        assert getattr(s1, m) == pytest.approx(getattr(d1, m), abs=1e-12), m


def test_report_content_is_the_same_on_both_engines(febrl_on_both):
    from abcde.report import build_report

    d, s = (build_report(res).to_dict() for res in febrl_on_both)
    assert s["engine"] == "spark" and d["engine"] == "duckdb"
    for key in ("headline", "restriction", "top_clusters", "neighbourhoods", "charts", "slices"):
        assert_same_content(d[key], s[key], key)


def test_same_exploration_sample_on_both_engines(spark):
    base, exp, w, kind = world(1, 400)
    b_t, e_t, i_t = tables(base, exp, w, kind)
    samples = [sample_affected(abcde.impact(b_t, e_t, items=i_t, engine=eng), size=80, seed=11)
               for eng in (abcde.connect(), spark)]
    a, b = (s.table.sort_by("item_id") for s in samples)
    assert a.num_rows == b.num_rows == 80
    assert a.column("item_id").to_pylist() == b.column("item_id").to_pylist()
    assert a.column("draw_count").to_pylist() == b.column("draw_count").to_pylist()
    assert np.allclose(a.column("importance_weight").to_numpy(), b.column("importance_weight").to_numpy(), rtol=1e-9, atol=0)


def test_same_pair_samples_on_both_engines(spark):
    base, exp, w, kind = world(2, 400)
    b_t, e_t, i_t = tables(base, exp, w, kind)
    got = []
    for eng in (abcde.connect(), spark):
        d = build_diff(Inputs(b_t, e_t, items=i_t), engine=eng)
        W = overall(d)["total_weight"]
        paper = sample_pairs(d, budget=40, seed=5, total_weight=W)
        strat = sample_stratified(d, budget=30, seed=5, total_weight=W)
        many = sample_stratified_many(d, budget=30, seeds=[5, 6], total_weight=W)  # one query for both seeds
        got.append((paper, strat, many, slice_self_terms(d, "kind", W)))
    cols = ["item_a", "item_b", "class", "pair_id", "needs_judgement"]
    (pa_d, st_d, many_d, sl_d), (pa_s, st_s, many_s, sl_s) = got
    assert pa_d.draws.select(cols).equals(pa_s.draws.select(cols))
    for c in STRATA:
        assert many_s[0].draws[c].equals(st_s.draws[c]) and many_d[0].draws[c].equals(st_d.draws[c]), c
        assert many_d[1].draws[c].select(cols).equals(many_s[1].draws[c].select(cols)), c
    assert sl_d.keys() == sl_s.keys()
    for v in sl_d:
        assert sl_s[v] == pytest.approx(sl_d[v], rel=1e-9, abs=1e-15), v
    assert pa_d.judgeable == pa_s.judgeable == 40
    for c in STRATA:
        assert st_d.draws[c].select(cols).equals(st_s.draws[c].select(cols)), c
    assert st_s.self_term == pytest.approx(st_d.self_term, abs=1e-12)
    for k, v in pa_d.totals.items():
        assert pa_s.totals[k] == pytest.approx(v, rel=1e-9, abs=1e-12), k


def test_cell_groups_and_agreed_draws_are_the_same_on_both_engines(spark):
    """The agreed stratum's draws by cells (issue 49): each cell's group (cheap arithmetic on its ids,
    integer, float, decimal or text, negative, huge, short, empty or not ASCII; a uint64 as each engine
    reads it) is the same integer on both engines, and so are the agreed draws of integer ids for several
    seeds."""
    from abcde.sampling.cells import GROUPS, cell_group
    from abcde.sampling.agreed import draw_agreed

    ints = pa.table({"base_cluster": [0, -1, 7, 2**62, -(2**63) + 5, 123456789012], "exp_cluster": [1, -7, 7, 3, 0, -2]})
    texts = pa.table({"base_cluster": ["", "a", "ab", "Zürich", "日本語です", "x" * 40, "12"],
                      "exp_cluster": ["b", "", "long-id-0001", "ü", "~!", "é", "12"]})
    floats = pa.table({"base_cluster": [2.0, 1e-05, 1e20, -3.5, float("inf"), 123456789.0],
                       "exp_cluster": [0.5, 7.0, -1e-300, 2.0**70, 3.0, -0.0]})
    import decimal
    big = [0, 5, 2**63 + 11, 2**64 - 1]
    # A uint64 column as DuckDB reads it, and as Spark does (a decimal(20, 0)): the same groups.
    unsigned = pa.table({"base_cluster": pa.array(big, pa.uint64()), "exp_cluster": pa.array(big[::-1], pa.uint64())})
    decimals = pa.table({"base_cluster": pa.array([decimal.Decimal(x) for x in big], pa.decimal128(20, 0)),
                         "exp_cluster": pa.array([decimal.Decimal(x) for x in big[::-1]], pa.decimal128(20, 0))})
    for duck, other in ((ints, ints), (texts, texts), (floats, floats), (unsigned, decimals), (decimals, decimals)):
        got = []
        for eng, t in ((abcde.connect(), duck), (spark, other)):
            m = ibis.memtable(t)
            got.append(eng.to_arrow(m.select(g=cell_group(m))).column("g").to_pylist())
        assert got[0] == got[1] and all(0 <= g < GROUPS for g in got[0]), duck.schema
    rng = np.random.default_rng(9)
    n = 600
    base_c = rng.integers(0, 150, n)
    exp_c = np.where(rng.random(n) < 0.1, base_c + 1000, base_c)
    ids = (np.arange(n) * 7919 + 3).tolist()
    b_t = pa.table({"item_id": ids, "cluster_id": base_c.tolist()})
    e_t = pa.table({"item_id": ids, "cluster_id": exp_c.tolist()})
    i_t = pa.table({"item_id": ids, "weight": rng.lognormal(0, 0.7, n).tolist()})
    drawn = []
    for eng in (abcde.connect(), spark):
        d = build_diff(Inputs(b_t, e_t, items=i_t), engine=eng)
        drawn.append(draw_agreed(d, budget=25, seeds=[1, 2, 3], id_type=pa.int64()))
    for s in (1, 2, 3):
        assert drawn[0][s].equals(drawn[1][s]), s
        assert len(set(drawn[0][s].column("pair_id").to_pylist())) == 25


def test_sparks_hex_conversion_gives_the_portable_uniforms(spark):
    """Spark reads a clock's hex digits with its own conv (issue 49): the same uniforms as Python's md5."""
    from abcde.sampling.clocks import hash_uniform, hash_uniform_py

    keys = [str(k) for k in range(400)] + ["é", "", "x" * 70]
    t = ibis.memtable(pa.table({"k": keys}))
    got = spark.to_arrow(t.select(u=hash_uniform(t.k, 11, "pairs:", spark))).column("u").to_pylist()
    assert got == [hash_uniform_py(k, 11, "pairs:") for k in keys]


def test_same_strata_counts_and_census_on_both_engines(spark):
    """The exact pair counts per stratum, and a census (a budget beyond every stratum's pairs: each
    listed whole with its pair weights), are the same on both engines."""
    base, exp, w, kind = world(2, 120)
    b_t, e_t, i_t = tables(base, exp, w, kind)
    got = []
    for eng in (abcde.connect(), spark):
        d = build_diff(Inputs(b_t, e_t, items=i_t), engine=eng)
        W = overall(d)["total_weight"]
        got.append((pair_counts(d), sample_stratified(d, budget=100_000, seed=3, total_weight=W)))
    (c_d, s_d), (c_s, s_s) = got
    assert c_d == c_s and sum(c_d[c] for c in STRATA) > 0
    assert s_d.census == s_s.census == {c for c in STRATA if c_d[c] > 0}
    cols = ["item_a", "item_b", "class", "label", "pair_id"]
    for c in STRATA:
        assert s_d.draws[c].select(cols).equals(s_s.draws[c].select(cols)), c
        assert s_d.draws[c].num_rows == c_d[c]
        if not c_d[c]:  # a stratum without pairs (here perhaps the agreed one) lists none
            continue
        assert s_s.draws[c].column("pair_weight").to_pylist() == pytest.approx(
            s_d.draws[c].column("pair_weight").to_pylist(), rel=1e-12), c


def test_spark_reads_part_directories_globs_and_csv(spark, tmp_path):
    base, exp, w, kind = world(3)
    b_t, e_t, i_t = tables(base, exp, w, kind)
    (tmp_path / "base").mkdir()
    for k, part in enumerate(range(0, b_t.num_rows, 80)):  # a directory of part files
        pq.write_table(b_t.slice(part, 80), tmp_path / "base" / f"part-{k:05d}.parquet")
    pacsv.write_csv(e_t, tmp_path / "exp.csv")
    pq.write_table(i_t.slice(0, 100), tmp_path / "items-0.parquet")
    pq.write_table(i_t.slice(100), tmp_path / "items-1.parquet")
    got = abcde.impact(tmp_path / "base", tmp_path / "exp.csv", items=str(tmp_path / "items-*.parquet"),
                       engine=spark)
    want = abcde.impact(b_t, e_t, items=i_t)
    for m in ("items", "affected_items") + METRICS:
        assert getattr(got, m) == pytest.approx(getattr(want, m), rel=1e-9), m


def test_cli_on_spark_prints_the_same_json_and_writes_parquet(spark, tmp_path):
    args = ["impact", "--base", str(EXAMPLE / "base.parquet"), "--exp", str(EXAMPLE / "exp.parquet"),
            "--items", str(EXAMPLE / "items.parquet"), "--json", "--quiet"]
    runner = CliRunner()
    out = {}
    for name in ("duckdb", "spark"):
        r = runner.invoke(main, args + ["--engine", name, "--out", str(tmp_path / name)])
        assert r.exit_code == 0, r.output
        out[name] = json.loads(r.output)
    for k in ("split_rate", "merge_rate", "jaccard_distance"):
        assert out["spark"][k] == pytest.approx(out["duckdb"][k], abs=1e-9)
    assert out["spark"]["engine"] == "spark"
    for name in ("items", "base_clusters", "exp_clusters"):
        spark_out = tmp_path / "spark" / f"{name}.parquet"
        assert spark_out.is_dir()  # Spark writes a directory of part files
        _rows_close(pq.read_table(tmp_path / "duckdb" / f"{name}.parquet"), pq.read_table(spark_out),
                    "item_id" if name == "items" else "cluster_id")
    r = runner.invoke(main, args + ["--engine", "spark", "--out", str(tmp_path / "spark")])  # overwrites
    assert r.exit_code == 0, r.output


#: The JVM options of the spark fixture (conftest.py): C1 JIT only, serial collector (less CPU for small
#: queries on 2 cores; no result changes), for the JVMs the spark-submit and Spark Connect tests start.
TEST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def _cli_in_fresh_python(args, *, env=None, pre=""):
    code = f"{pre}\nfrom abcde.cli import main\nmain({args!r})"
    # A bound against a hang, not a speed: a loaded 2-core machine starts a JVM slowly.
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=900)


def test_missing_java_is_a_one_line_message(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(tmp_path)  # no java on it
    r = _cli_in_fresh_python(["impact", "--base", str(EXAMPLE / "base.parquet"), "--exp",
                              str(EXAMPLE / "exp.parquet"), "--engine", "spark"], env=env)
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    assert "needs Java" in r.stderr and "apt-get install" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_missing_pyspark_is_a_one_line_message():
    # pyspark is installed here; hide it from this one process to see the message.
    r = _cli_in_fresh_python(["impact", "--base", str(EXAMPLE / "base.parquet"), "--exp",
                              str(EXAMPLE / "exp.parquet"), "--engine", "spark"],
                             pre="import sys; sys.modules['pyspark'] = None")
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    assert "pip install 'abcde[spark]'" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_spark_submit_runs_the_driver_script(tmp_path):
    """The cluster path of the README, on a local master: spark-submit + the driver script."""
    submit = Path(sys.executable).parent / "spark-submit"
    if not submit.exists():  # it comes with pyspark; CI installs it
        pytest.fail(f"No {submit}: spark-submit comes with pyspark (pip install 'abcde[spark]'; "
                    "or deselect the Spark tests: -m 'not spark')")
    driver = subprocess.run([sys.executable, "-m", "abcde", "--driver-path"], capture_output=True, text=True,
                            check=True).stdout.strip()
    r = subprocess.run([str(submit), "--master", "local[2]", "--driver-java-options", TEST_JVM,
                        "--conf", "spark.ui.enabled=false",
                        "--conf", "spark.sql.shuffle.partitions=4", driver,
                        "impact", "--engine", "spark", "--base", str(EXAMPLE / "base.parquet"),
                        "--exp", str(EXAMPLE / "exp.parquet"), "--out", str(tmp_path / "out"), "--json", "--quiet"],
                       capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable))
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout)
    want = abcde.impact(EXAMPLE / "base.parquet", EXAMPLE / "exp.parquet").to_dict()
    assert got["engine"] == "spark"
    assert got["jaccard_distance"] == pytest.approx(want["jaccard_distance"], abs=1e-9)
    assert (tmp_path / "out" / "items.parquet").is_dir() and (tmp_path / "out" / "impact.json").is_file()


def test_bad_input_gets_the_same_clear_errors(engine, tmp_path):
    """A few classes of bad input from test_bad_input.py, on both engines (Ibis on Spark
    compiles isinf to FALSE and counts NaN as null; abcde's checks do not rely on either)."""
    from abcde.errors import InputError

    def w(name, **cols):
        pq.write_table(pa.table(cols), tmp_path / name)
        return tmp_path / name

    base = w("base.parquet", item_id=[1, 2, 3, 4, 5], cluster_id=["a", "a", "a", "b", "b"])
    exp = w("exp.parquet", item_id=[1, 2, 3, 4, 5], cluster_id=["a", "a", "c", "c", "b"])
    (tmp_path / "corrupt.parquet").write_bytes(b"PAR1 this is not really parquet")
    cases = [
        ((base, w("dup.parquet", item_id=[1, 1, 2, 3, 3, 4], cluster_id=["a", "b", "a", "c", "c", "d"])), {},
         r"2 item ids appear in more than one row of exp file '.*dup.parquet' \(first: 1, 3\)"),
        ((base, exp), {"items": w("nan.parquet", item_id=[1, 2, 3, 4, 5], weight=[1.0, float("nan"), 1, 1, 1])},
         r"1 items in items file '.*nan.parquet' have a NaN weight in column 'weight' \(first: 2: nan\)"),
        ((base, exp), {"items": w("inf.parquet", item_id=[1, 2, 3, 4, 5], weight=[1.0, 1, float("inf"), 1, 1])},
         r"1 items in items file '.*inf.parquet' have a infinite weight in column 'weight' \(first: 3: inf"),
        ((tmp_path / "corrupt.parquet", exp), {}, r"Cannot read the base file '.*corrupt.parquet': .*(Parquet|magic bytes)"),
    ]
    for args, kw, pattern in cases:
        with pytest.raises(InputError, match=pattern):
            abcde.impact(*args, engine=engine, **kw)


@pytest.fixture(scope="module")
def connect_url(tmp_path_factory):
    """A local Spark Connect server (the classic session's JVM is separate), for one module."""
    import socket
    import time

    try:
        import grpc  # noqa: F401  the Spark Connect client needs it
    except ImportError as exc:
        pytest.fail(f"The Spark Connect test needs pip install 'abcde[spark-connect]': {exc} "
                    "(or deselect the Spark tests: -m 'not spark')")
    submit = Path(sys.executable).parent / "spark-submit"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tmp_path_factory.mktemp("connect") / "server.log"
    with open(log, "w") as fh:
        proc = subprocess.Popen(
            [str(submit), "--master", "local[2]", "--driver-java-options", TEST_JVM,
             "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
             "--conf", f"spark.connect.grpc.binding.port={port}", "--conf", "spark.ui.enabled=false",
             "--conf", "spark.sql.shuffle.partitions=4", "spark-internal"],
            stdout=fh, stderr=subprocess.STDOUT, env=dict(os.environ, PYSPARK_PYTHON=sys.executable))
    try:
        deadline = time.time() + 900  # against a hang, not a speed: a loaded machine starts a JVM slowly
        while "Spark Connect server started" not in log.read_text():
            if proc.poll() is not None or time.time() > deadline:
                pytest.fail(f"Spark Connect server did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield f"sc://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def test_spark_connect_gives_duckdbs_numbers_and_pairs(connect_url, tmp_path):
    common = ["--base", str(EXAMPLE / "base.parquet"), "--exp", str(EXAMPLE / "exp.parquet"),
              "--items", str(EXAMPLE / "items.parquet"), "--quiet"]
    remote = ["--engine", "spark", "--spark-remote", connect_url]
    r = _cli_in_fresh_python(["impact", *common, *remote, "--json"])
    assert r.returncode == 0, r.stderr[-2000:]
    want = _febrl(abcde.connect())
    got = json.loads(r.stdout)
    for m in METRICS:
        assert got[m] == pytest.approx(getattr(want, m), abs=1e-9), m
    args = ["pairs", *common, "--budget", "30", "--seed", "2"]
    r = _cli_in_fresh_python(args + remote + ["--out", str(tmp_path / "remote")])
    assert r.returncode == 0, r.stderr[-2000:]
    assert CliRunner().invoke(main, args + ["--out", str(tmp_path / "local")]).exit_code == 0
    assert pq.read_table(tmp_path / "remote" / "pairs.parquet").equals(pq.read_table(tmp_path / "local" / "pairs.parquet"))


@pytest.mark.parametrize("estimator", ["stratified", "paper"])
def test_extend_equals_a_fresh_draw_on_spark(spark, tmp_path, estimator):
    """'pairs --extend' on Spark: the grown sample is the fresh draw at the larger budget, and the
    same as DuckDB's (issue 13: both estimators, both engines). The fresh draw is DuckDB's: Spark's own
    fresh draws are DuckDB's (test_same_pair_samples_on_both_engines), so one on Spark too would only
    repeat that test."""
    from abcde.quality import extend_pair_sample

    def draw(out, budget, eng):
        return abcde.draw_pair_sample(EXAMPLE / "base.parquet", EXAMPLE / "exp.parquet", out, items=EXAMPLE / "items.parquet",
                                      budget=budget, seed=11, estimator=estimator, engine=eng)

    draw(tmp_path / "grown", 40, spark)
    extend_pair_sample(tmp_path / "grown", budget=70, engine=spark)
    draw(tmp_path / "fresh", 70, abcde.connect())
    tables = {k: pq.read_table(tmp_path / k / "pairs.parquet").replace_schema_metadata(None)
              for k in ("grown", "fresh")}
    assert tables["grown"].equals(tables["fresh"])
    assert tables["grown"].num_rows >= 70


def test_fetched_tables_have_the_expressions_types(engine):
    """A fetch returns the types the expression says, whatever the engine computes them in: a SUM
    is a HUGEINT in DuckDB (int64 in Ibis), a literal 1.5 a DECIMAL (float64), a count of a
    string column an int64; values exact, a null-typed column all nulls."""
    import ibis

    t = ibis.memtable(pa.table({"k": ["a", "b", "a", None], "x": pa.array([1, 2, 3, 2**40], pa.int64()),
                                "flag": [True, False, True, True]}))
    expr = t.group_by("k").aggregate(
        n=t.count(), s=t.x.sum(), trues=t.flag.sum(), half=(t.x.sum() * ibis.literal(1.5)).cast("float64"),
        mean=t.x.mean(), narrow=(t.x.max() % 1000).cast("int32"), name=t.k.max(),
        nothing=ibis.null()).mutate(lit=ibis.literal(1.5)).order_by("k")
    got = engine.to_arrow(expr)
    assert got.schema == expr.schema().to_pyarrow()
    rows = {r["k"]: r for r in got.to_pylist()}
    assert rows["a"]["s"] == 4 and rows["a"]["trues"] == 2 and rows["a"]["half"] == 6.0
    assert rows[None]["s"] == 2**40 and rows[None]["narrow"] is not None and rows[None]["nothing"] is None
    assert rows["b"]["trues"] == 0 and rows["b"]["n"] == 1 and rows["b"]["name"] == "b" and rows["b"]["lit"] == 1.5


def test_huge_integer_cluster_ids_come_back_exact_on_both_engines(spark):
    """Cluster ids above 2^53 and near 2^63 (64-bit hashes), in queries whose id columns hold
    nulls (both sides' top clusters and neighbourhoods in one query each): every id exact, on
    Spark as on DuckDB (a fetch through pandas made them float64)."""
    from abcde.report import build_report

    B, top = 2**53, 2**63 - 1
    ids = list(range(1, 11))
    base = pa.table({"item_id": ids, "cluster_id": [B + 1] * 3 + [B + 3] * 2 + [top] * 3 + [-top, -top]})
    exp = pa.table({"item_id": ids, "cluster_id": list("aabbcccdee")})
    got = {}
    for name, eng in (("duckdb", abcde.connect()), ("spark", spark)):
        res = abcde.impact(base, exp, engine=eng)
        nb = build_report(res).to_dict()["neighbourhoods"]
        got[name] = ([r["cluster_id"] for r in res.top_clusters["base"]],
                     [r["cluster_id"] for r in res.top_clusters["interleaved"]], sorted(nb["base"]), sorted(nb["exp"]))
    assert got["spark"] == got["duckdb"]
    assert set(got["duckdb"][0]) == {B + 1, B + 3, top}
    assert sorted(got["duckdb"][2]) == sorted(str(i) for i in (B + 1, B + 3, top))


def test_closing_a_duckdb_engine_removes_its_scratch_parts_and_closes_it(monkeypatch, tmp_path):
    """What every command does when it is done (``Engine.close``): the scratch Parquet parts of a
    large path removed from --temp-directory, the connection closed."""
    import abcde.core.diff as cd
    from abcde.engine import connect
    from abcde.errors import EngineError

    monkeypatch.setattr(cd, "LARGE_ROWS", 1000)  # the example takes the large path: parts on disk
    eng = connect("duckdb", temp_directory=tmp_path / "spill")
    res = abcde.impact(EXAMPLE / "base.parquet", EXAMPLE / "exp.parquet", items=EXAMPLE / "items.parquet", engine=eng)
    parts = [h[1] for h in eng._temp if isinstance(h, tuple) and h[0] == "dir"]
    assert parts and all(Path(d).exists() for d in parts)
    eng.close()
    assert not any(Path(d).exists() for d in parts)
    with pytest.raises(EngineError):
        eng.rows(res.diff.fragments)
