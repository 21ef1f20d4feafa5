"""``abcde entities --extend DIR --budget N`` (issue 53: the directory works like a pair sample's): the
first draws and every answer kept, the files those of a fresh sample of N draws with the same seed,
refusals in one line, and an extension stopped while its files were being replaced finished by the
next one, nothing lost."""

from __future__ import annotations

import json
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import abcde.examples as ex
from abcde.completion import EntityStore, estimate_entities, write_entity_sample
from abcde.completion import extend as extend_mod
from abcde.completion.extend import extend_entity_sample
from abcde.completion.sample import FILES, EntitySample
from abcde.errors import InputError
from abcde.samples.dir_lock import lock_directory

P = ex.example_paths()


def _cli(*args, ok=True):
    r = subprocess.run([sys.executable, "-m", "abcde", *map(str, args)], capture_output=True, text=True)
    assert (r.returncode == 0) == ok, r.stderr + r.stdout
    return r


def _draw(d, budget, seed=4):
    return write_entity_sample(P["base"], P["exp"], d, items=P["items"], budget=budget, seed=seed, hide=["entity_id"],
                               candidates="surname", slice_by=["source"] if "source" in pq.read_schema(P["items"]).names
                               else ())


def same_files(a, b) -> None:
    """The sample files of ``a`` and ``b`` hold the same rows: ids, flags and text exactly, weights to
    1e-12 (a cluster's weight is a parallel sum, whose last bits DuckDB may vary from run to run)."""
    assert (a / "tasks.jsonl").read_bytes() == (b / "tasks.jsonl").read_bytes()
    for f in FILES:
        if not f.endswith(".parquet"):
            continue
        x, y = pq.read_table(a / f), pq.read_table(b / f)
        assert x.schema == y.schema and x.num_rows == y.num_rows, f
        for c in x.column_names:
            u, v = x.column(c).to_pylist(), y.column(c).to_pylist()
            if pa.types.is_floating(x.schema.field(c).type):
                assert u == pytest.approx(v, rel=1e-12), (f, c)
            else:
                assert u == v, (f, c)


def _answer_first(s: EntitySample, k: int) -> dict:
    """A person's answers to the first ``k`` anchors (every member 'same', searched): {anchor: rows}."""
    st = EntityStore(s.path, create=True)
    done = {}
    for t in s.tasks()[:k]:
        rows = [(m["item_id"], "same") for m in t["members"]] + [(None, "searched")]
        st.record_anchor(t["anchor"], rows, rater="ann")
        done[t["anchor"]] = rows
    return done


def test_an_extension_keeps_every_draw_and_answer_and_equals_a_fresh_sample(tmp_path):
    s = _draw(tmp_path / "s", 30)
    answered = _answer_first(s, 5)
    before = EntityStore(s.path).live()
    fresh = _draw(tmp_path / "fresh", 90)
    r = _cli("entities", "--extend", s.path, "--budget", 90, "--json")
    d = json.loads(r.stdout)
    assert d["draws"] == 90 and d["anchors"] == fresh.metadata["anchors"]
    e = EntitySample.read(s.path)
    assert e.draws.column("item_id").to_pylist()[:30] == s.draws.column("item_id").to_pylist()
    same_files(e.path, fresh.path)  # the files of a fresh sample of 90 draws
    keep = [k for k in fresh.metadata if k not in ("files", "sample_id")]
    for k in keep:
        want = fresh.metadata[k]
        assert e.metadata[k] == (pytest.approx(want, rel=1e-12) if isinstance(want, float) else want), k
    assert e.metadata["sample_id"] == s.metadata["sample_id"] != fresh.metadata["sample_id"]
    assert EntityStore(s.path).live() == before  # every answer, as it was
    q = estimate_entities(s.path)
    assert q.judged == len(answered) and q.anchors == e.anchors.num_rows
    assert not (s.path / extend_mod.EXTENDING).exists()


def test_extending_to_a_census_and_refusals(tmp_path):
    s = _draw(tmp_path / "s", 20)
    n = s.metadata["n_affected"]
    for budget, words in ((20, "is not more than the sample's 20 draws"), (5, "is not more than")):
        with pytest.raises(InputError, match=words):
            extend_entity_sample(s.path, budget=budget)
    r = _cli("entities", "--extend", s.path, "--budget", 50, "--seed", 9, ok=False)
    assert "--seed cannot be given with --extend" in r.stderr
    r = _cli("entities", "--extend", tmp_path, "--budget", 50, ok=False)
    assert "is not an entity sample directory" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / ".judging.lock").exists()
    # while a judging server holds the directory: refused, nothing drawn
    with lock_directory(s.path, "http://127.0.0.1:1"):
        r = _cli("entities", "--extend", s.path, "--budget", 50, ok=False)
        assert "is in use (pid" in r.stderr and "nothing was drawn" in r.stderr
    assert EntitySample.read(s.path).metadata["budget"] == 20
    c = extend_entity_sample(s.path, budget=n)
    assert c.metadata["census"] and c.anchors.num_rows == n
    with pytest.raises(InputError, match="already a census"):
        extend_entity_sample(s.path, budget=n + 10)


def test_changed_inputs_refuse_the_extension(tmp_path):
    base = tmp_path / "base.parquet"
    pq.write_table(pq.read_table(P["base"]), base)
    s = write_entity_sample(base, P["exp"], tmp_path / "s", items=P["items"], budget=20, seed=1)
    t = pq.read_table(base).to_pydict()
    t["cluster_id"][0] = t["cluster_id"][5]
    pq.write_table(pa.table(t), base)
    r = _cli("entities", "--extend", s.path, "--budget", 40, ok=False)
    assert "changed since the entity sample" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_an_extension_stopped_while_replacing_its_files_is_finished_by_the_next(tmp_path, monkeypatch):
    s = _draw(tmp_path / "s", 30)
    _answer_first(s, 3)
    before = EntityStore(s.path).live()
    real = extend_mod.os.replace
    calls = []

    def crash(a, b):  # the process stops after the second file is replaced
        calls.append(a)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(a, b)

    monkeypatch.setattr(extend_mod.os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        extend_entity_sample(s.path, budget=60)
    monkeypatch.setattr(extend_mod.os, "replace", real)
    with pytest.raises(InputError, match="was interrupted while its files were being replaced"):
        EntitySample.read(s.path)
    r = _cli("quality", s.path, ok=False)
    assert "entities --extend" in r.stderr and "every answer is kept" in r.stderr
    e = extend_entity_sample(s.path, budget=60)
    assert e.metadata["budget"] == 60 and EntityStore(s.path).live() == before
    same_files(e.path, _draw(tmp_path / "fresh", 60).path)


def test_an_extension_stopped_before_its_files_were_written_leaves_the_sample_whole(tmp_path, monkeypatch):
    s = _draw(tmp_path / "s", 30)
    old = {f: (s.path / f).read_bytes() for f in FILES}

    def stop(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(extend_mod, "write_sample_files", stop)
    with pytest.raises(KeyboardInterrupt):
        extend_entity_sample(s.path, budget=60)
    assert {f: (s.path / f).read_bytes() for f in FILES} == old
    assert EntitySample.read(s.path).metadata["budget"] == 30


def test_the_oracle_and_a_model_judge_the_new_anchors_and_keep_their_earlier_answers(tmp_path):
    from abcde.completion import oracle_entities
    from abcde.completion.judgements import ANSWERS_FILE
    from abcde.completion.model import MODEL_FILE, model_entities

    s = _draw(tmp_path / "s", 20)
    oracle_entities(s, "entity_id")
    asked = []

    def judge(a, b):
        asked.append(1)
        return "same" if len(asked) % 2 else "different"  # a model whose answers differ run to run

    model_entities(s, judge)
    n_first = len(asked)
    old_oracle, old_model = pq.read_table(s.path / ANSWERS_FILE), pq.read_table(s.path / MODEL_FILE)
    e = extend_entity_sample(s.path, budget=60)
    oracle_entities(e, "entity_id")
    new_oracle = pq.read_table(s.path / ANSWERS_FILE)
    assert set(new_oracle.column("anchor").to_pylist()) == set(e.anchors.column("item_id").to_pylist())
    old_rows = set(map(tuple, zip(*(old_oracle.column(c).to_pylist() for c in old_oracle.column_names))))
    assert old_rows <= set(map(tuple, zip(*(new_oracle.column(c).to_pylist() for c in new_oracle.column_names))))
    model_entities(e, judge)
    new_model = pq.read_table(s.path / MODEL_FILE)
    assert new_model.slice(0, old_model.num_rows).equals(old_model)  # the earlier answers as they were
    assert set(new_model.column("anchor").to_pylist()) == set(e.anchors.column("item_id").to_pylist())
    before = len(asked)
    model_entities(e, judge)  # nothing new: nobody is asked again, nothing changes
    assert len(asked) == before > n_first and pq.read_table(s.path / MODEL_FILE).equals(new_model)
    # an oracle file holding another answer is still refused
    t = new_oracle.to_pydict()
    k = t["answer"].index("same")
    t["answer"][k] = "different"
    pq.write_table(pa.table(t, schema=new_oracle.schema), s.path / ANSWERS_FILE)
    with pytest.raises(InputError, match="already holds other entity answers"):
        oracle_entities(e, "entity_id")
    q = estimate_entities(s.path, source="model")
    assert q.judged == e.anchors.num_rows
