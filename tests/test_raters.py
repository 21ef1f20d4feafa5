"""Raters are who they say, and a name costs nothing (issue 25, class 5).

- A judgement file without a ``rater`` column is one rater of its own, the file itself:
  ``alice/judgements.csv`` and ``bob/judgements.csv`` are two raters (the old rule named a file's
  rater by its file name, so the two were one and a 2-to-1 majority became a tie). One rater
  name is one rater in every file and store, so a store read beside its own export counts once,
  and no rater name (not even the old ``file:judgements.csv``) can stand for a file.
- The judging server keeps a pair order for raters who have judged, and for at most
  ``UNKNOWN_ORDERS`` other names: 10,000 names sent to ``/api/state`` leave its memory bounded,
  while real raters keep their order and resume where they stopped.
- ``abcde quality`` says which sources (person, model, oracle) and how many judgements of each
  went into the estimates, in its text and in ``--json`` (``judgements_used``).
"""

from __future__ import annotations

import gc
import json
import tracemalloc
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from abcde.cli import main
from abcde.errors import InputError
from abcde.judging import JudgingSession
from abcde.judging.session import UNKNOWN_ORDERS
from abcde.quality import PairSampleDir, estimate_quality, load_judgements
from abcde.samples.store import JudgementStore
from judging_helpers import fresh_copy, make_sample


@pytest.fixture(scope="module")
def drawn(tmp_path_factory) -> Path:
    """A 60-pair sample of the bundled example (with a hostile ``note`` attribute)."""
    return make_sample(tmp_path_factory.mktemp("raters"), budget=60)


@pytest.fixture
def sample(drawn, tmp_path) -> Path:
    return fresh_copy(drawn, tmp_path)


def judgeable(d: Path) -> list[str]:
    return sorted(PairSampleDir.read(d).judgeable_ids())


def write_csv(path: Path, rows: list[tuple[str, str]], *, rater: str | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    head = "pair_id,judgement" + (",rater" if rater else "")
    path.write_text("\n".join([head, *(f"{p},{j}" + (f",{rater}" if rater else "") for p, j in rows)]) + "\n")
    return path


# -- files without a rater column ----------------------------------------------------------------

def test_files_without_a_rater_column_are_one_rater_each(sample, tmp_path):
    """alice/ and bob/ say same, carol/ says different: 2 to 1 is same, not a tie (it was a tie:
    alice's and bob's files were one rater, 'file:judgements.csv')."""
    pids = judgeable(sample)[:5]
    files = [write_csv(tmp_path / who / "judgements.csv", [(p, answer) for p in pids])
             for who, answer in (("alice", "same"), ("bob", "same"), ("carol", "different"))]
    res = load_judgements(files, pair_ids=set(judgeable(sample)), id_type="string")
    assert res.by_pair == {p: "same" for p in pids}
    assert (res.disagreements, res.ties, res.raters) == (5, 0, 3)
    assert res.sources == {"person": 15}
    q = estimate_quality(sample, files)
    assert (q.disagreements, q.ties) == (5, 0)
    assert q.design["judgements_used"]["by_source"] == {"person": 15}


def test_two_files_of_one_name_disagreeing_are_two_raters_not_a_contradiction(sample, tmp_path):
    pids = judgeable(sample)[:3]
    a = write_csv(tmp_path / "alice" / "judgements.csv", [(p, "same") for p in pids])
    b = write_csv(tmp_path / "bob" / "judgements.csv", [(p, "different") for p in pids])
    res = load_judgements([a, b], pair_ids=set(judgeable(sample)), id_type="string")
    assert (res.disagreements, res.ties) == (3, 3)  # one each: a tie, by the vote rule


def test_one_file_contradicting_itself_is_named(sample, tmp_path):
    p = judgeable(sample)[0]
    f = write_csv(tmp_path / "j.csv", [(p, "same"), (p, "different")])
    with pytest.raises(InputError, match=r"judgements file '.*j\.csv' \(no rater named: the file is one rater\) "
                                         r"judged pair .* both 'same' and 'different'.*row 2"):
        load_judgements([f], pair_ids=set(judgeable(sample)), id_type="string")


def test_the_same_file_given_twice_is_one_rater(sample, tmp_path):
    pids = judgeable(sample)[:4]
    f = write_csv(tmp_path / "j.csv", [(p, "same") for p in pids])
    again = tmp_path / "sub" / ".." / "j.csv"
    (tmp_path / "sub").mkdir()
    res = load_judgements([f, again], pair_ids=set(judgeable(sample)), id_type="string")
    assert (res.raters, res.disagreements, res.sources) == (1, 0, {"person": 4})


def test_a_rater_name_never_stands_for_a_file(sample, tmp_path):
    """A rater literally named as the old file rater was ('file:judgements.csv') is a rater of its own."""
    pids = judgeable(sample)[:2]
    anon = write_csv(tmp_path / "x" / "judgements.csv", [(p, "same") for p in pids])
    named = write_csv(tmp_path / "named.csv", [(p, "different") for p in pids], rater="file:judgements.csv")
    res = load_judgements([anon, named], pair_ids=set(judgeable(sample)), id_type="string")
    assert (res.raters, res.ties) == (2, 2)


def test_one_name_is_one_rater_across_files_and_the_store(sample, tmp_path):
    """The same name in two files is the same rater (a contradiction between them is refused); the
    store and its export count once; a file without raters beside the store is another rater."""
    pids = judgeable(sample)[:4]
    store = JudgementStore(sample)
    for p in pids:
        store.record(p, "same", rater="ann")
    export = tmp_path / "export.csv"
    r = CliRunner().invoke(main, ["judge", "export", str(sample), "--out", str(export)])
    assert r.exit_code == 0, r.output
    res = load_judgements([sample / "judgements.sqlite", export], pair_ids=set(judgeable(sample)), id_type="string")
    assert (res.raters, res.sources, res.disagreements) == (1, {"person": 4}, 0)
    anon = write_csv(tmp_path / "ann" / "judgements.csv", [(p, "different") for p in pids])
    res = load_judgements([sample / "judgements.sqlite", anon], pair_ids=set(judgeable(sample)), id_type="string")
    assert (res.raters, res.ties) == (2, 4)
    other = write_csv(tmp_path / "ann2.csv", [(pids[0], "different")], rater="ann")
    with pytest.raises(InputError, match=r"Rater 'ann' judged pair .* both 'same' and 'different'"):
        load_judgements([sample / "judgements.sqlite", other], pair_ids=set(judgeable(sample)), id_type="string")


def test_tables_in_memory_without_raters_are_one_rater_each(sample):
    pids = judgeable(sample)[:2]
    tables = [pa.table({"pair_id": pids, "judgement": [a] * 2}) for a in ("same", "same", "different")]
    res = load_judgements(tables, pair_ids=set(judgeable(sample)), id_type="string")
    assert (res.raters, res.ties, res.by_pair) == (3, 0, {p: "same" for p in pids})


# -- a name costs nothing ----------------------------------------------------------------------------

def _frozen_store(session: JudgingSession) -> None:
    """Serve the store's judgements from one read (the store itself is re-read on every request;
    this test measures the session's own memory, 10,000 requests in seconds)."""
    live, version = session.store.live(source="person"), session.store.version()
    session.store.live = lambda *, source=None, rater=None: [j for j in live if rater in (None, j.rater)
                                                            and source in (None, j.source)]
    session.store.version = lambda: version


def test_ten_thousand_names_that_never_judge_take_bounded_memory(sample):
    s = JudgingSession(sample, seed=3)
    fresh = JudgingSession(sample, seed=3)
    # Two real raters judge (ann three pairs, bob one); their orders are kept.
    for rater, k in (("ann", 3), ("bob", 1)):
        for _ in range(k):
            nxt = s.state(rater)["next"]["pair_id"]
            s.submit(rater, nxt, "same")
    ann_order = list(s.order("ann"))
    ann_next = s.state("ann")["next"]["pair_id"]
    _frozen_store(s)
    for i in range(50):  # warm: the LRU filled, every lazy structure built
        s.state(f"warm {i}")
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(10_000):
            s.state(f"visitor {i}")
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # Before: every name kept its order forever, ≥ 2.6 KiB each (26 MiB for 10,000 names).
    assert grown < 256 * 1024, f"the session grew by {grown:,} bytes for 10,000 names"
    assert len(s._unknown_orders) <= UNKNOWN_ORDERS and set(s._orders) == {"ann", "bob"}
    # Real raters keep their order and resume at their next pair, as a fresh server shows it.
    assert s.order("ann") == ann_order == fresh.order("ann")
    assert s.state("ann")["next"]["pair_id"] == ann_next == fresh.state("ann")["next"]["pair_id"]
    # A name seen before its first judgement gets the same order when it comes back, and is kept once it judges.
    first = s.state("visitor 0")["next"]["pair_id"]
    assert first == fresh.state("visitor 0")["next"]["pair_id"]


def test_names_sent_over_http_take_bounded_memory(sample):
    """The same over the judging app's /api/state, with the store read on every request."""
    from starlette.testclient import TestClient

    from abcde.web.judging_server import create_judging_app

    s = JudgingSession(sample)
    with TestClient(create_judging_app(s)) as client:
        def state(name):
            r = client.get("/api/state", params={"rater": name})
            assert r.status_code == 200, r.text
            return r.json()

        for i in range(50):
            state(f"warm {i}")
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for i in range(200):
                state(f"visitor {i}")
            gc.collect()
            grown = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        assert grown < 200 * 1024, f"grew by {grown:,} bytes for 200 names"
        assert len(s._orders) == 0 and len(s._unknown_orders) <= UNKNOWN_ORDERS
        nxt = state("ann")["next"]["pair_id"]
        r = client.post("/api/judgements", json={"rater": "ann", "pair_id": nxt, "judgement": "same"})
        assert r.status_code == 201, r.text
        assert "ann" in s._orders  # a rater exists once they judge


# -- quality says which sources it used --------------------------------------------------------------

def test_quality_says_which_sources_it_used(sample):
    runner = CliRunner()
    r = runner.invoke(main, ["judge", "oracle", str(sample), "--oracle-column", "entity_id"])
    assert r.exit_code == 0, r.output
    store = JudgementStore(sample)
    pids = judgeable(sample)
    for p in pids[:3]:
        store.record(p, "different", rater="ann")
    n = len(pids)

    r = runner.invoke(main, ["quality", str(sample)])
    assert r.exit_code == 0, r.output
    line = r.output.strip().splitlines()[-1]
    assert line == (f"Judgements used: {n} oracle, 3 person by 2 raters (every source; pass --source person, "
                    "model or oracle to use one).")
    d = json.loads(runner.invoke(main, ["quality", str(sample), "--json"]).output)
    assert d["judgements_used"] == {"by_source": {"person": 3, "oracle": n}, "total": n + 3, "raters": 2,
                                    "source": None, "left_out": {}}
    r = runner.invoke(main, ["quality", str(sample), "--source", "person"])
    assert r.output.strip().splitlines()[-1] == f"Judgements used: 3 person by 1 rater (--source person; left " \
                                                f"out: {n} oracle)."
    d = json.loads(runner.invoke(main, ["quality", str(sample), "--source", "oracle", "--json"]).output)
    assert d["judgements_used"] == {"by_source": {"oracle": n}, "total": n, "raters": 1, "source": "oracle",
                                    "left_out": {"person": 3}}
    # One source only: said plainly.
    only = fresh_copy(sample, sample.parent / "only")
    JudgementStore(only).record(pids[0], "same", rater="ann")
    r = runner.invoke(main, ["quality", str(only)])
    assert r.output.strip().splitlines()[-1] == "Judgements used: 1 person by 1 rater."
