"""No command loses, overwrites or mixes up judgements (issue 13, items 1 and 2): a sample
directory drawn again keeps the judgements that still belong to it; another sample is refused
unless --force, and then the earlier sample moves aside with its judgements, still usable;
the oracle adds its judgements to the store beside people's and never replaces a file."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

from abcde.cli import main
from abcde.examples import example_paths
from abcde.samples.dir_lock import lock_directory
from abcde.samples.store import JudgementStore
from content import assert_same_content

P = example_paths("febrl3")


def cli(*args) -> tuple[int, str]:
    r = CliRunner().invoke(main, [str(a) for a in args])
    return r.exit_code, r.output


def draw(out, *extra, base=P["base"], exp=P["exp"]):
    return cli("pairs", "--base", base, "--exp", exp, "--items", P["items"], "--budget", 40, "--seed", 1,
               "--out", out, *extra)


def files(d: Path) -> dict:
    """Every file below ``d`` with a digest of its bytes."""
    return {str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(d.rglob("*")) if p.is_file()}


def quality(d, *extra) -> dict:
    code, out = cli("quality", d, "--json", *extra)
    assert code == 0, out
    return json.loads(out)


@pytest.fixture
def judged(tmp_path):
    """A sample with slices, the oracle's judgements, two of a person's in the store and a
    person's exported judgement file."""
    d = tmp_path / "pairs"
    code, out = draw(d, "--slice-by", "source")
    assert code == 0, out
    assert cli("judge", "oracle", d, "--oracle-column", "entity_id")[0] == 0
    store = JudgementStore(d)
    for pid in store.pair_ids[:2]:
        store.record(pid, "same", rater="ann")
    code, out = cli("judge", "export", d, "--out", tmp_path / "person.csv", "--source", "person")
    assert code == 0, out
    shutil.copy(tmp_path / "person.csv", d / "judgements.csv")  # an export is never written into DIR itself
    return d


def test_drawing_the_same_sample_again_keeps_its_judgements(judged):
    before = files(judged)
    q = quality(judged, "--source", "oracle")
    code, out = draw(judged, "--slice-by", "source")
    assert code == 0, out
    after = files(judged)
    for f in ("judgements.sqlite", "judgements.csv"):
        assert after[f] == before[f], f
    assert len(JudgementStore(judged).live(source="person")) == 2
    assert len(JudgementStore(judged).live(source="oracle")) == q["judged_pairs"] + q["unsure_pairs"]
    assert_same_content(quality(judged, "--source", "oracle"), q)  # parallel sums: last bits may differ
    assert not (judged / "replaced").exists()


def test_another_sample_is_refused_and_forced_aside_with_its_judgements(judged):
    before = files(judged)
    person = {(j.pair_id, j.judgement) for j in JudgementStore(judged).live(source="person")}
    # Base and Exp swapped, no --slice-by: another sample (the silently wrong ΔPrecision(duplicate)).
    code, out = draw(judged, base=P["exp"], exp=P["base"])
    assert code == 1 and "Traceback" not in out
    assert "already holds pair sample" in out and "--force" in out and "judgements.sqlite" in out
    assert files(judged) == before  # nothing written, nothing moved

    code, out = draw(judged, "--force", base=P["exp"], exp=P["base"])
    assert code == 0, out
    meta = json.loads((judged / "metadata.json").read_text())
    aside = Path(meta["replaced"]["moved_to"])
    compact = "".join(out.split())  # the terminal may wrap the path
    assert str(aside) in compact and "nothingwasdeleted" in compact
    assert aside.parent == judged / "replaced"
    # The earlier sample and its judgements moved together, byte for byte, and still work together.
    for f in ("pairs.parquet", "slices.parquet", "judgements.sqlite", "judgements.csv", "tasks.csv"):
        assert files(aside)[f] == before[f], f
    assert {(j.pair_id, j.judgement) for j in JudgementStore(aside).live(source="person")} == person
    assert quality(aside, "--source", "person")["judged_pairs"] == 2
    # The new sample has no judgements and no stale slice multipliers of the old one.
    assert not (judged / "judgements.sqlite").exists() and not (judged / "judgements.csv").exists()
    assert not (judged / "slices.parquet").exists()
    code, out = cli("quality", judged, "--slice-by", "source")
    assert code == 1 and "No exact slice multipliers for 'source'" in out


def test_stale_slices_of_the_same_sample_move_aside(judged):
    code, out = draw(judged)  # the same pairs, now without --slice-by
    assert code == 0, out
    meta = json.loads((judged / "metadata.json").read_text())
    assert meta["replaced"]["files"] == ["slices.parquet"]
    assert (Path(meta["replaced"]["moved_to"]) / "slices.parquet").exists()
    code, out = cli("quality", judged, "--slice-by", "source")
    assert code == 1 and "No exact slice multipliers" in out
    assert len(JudgementStore(judged).live(source="person")) == 2  # judgements stay


def test_the_oracle_adds_to_the_store_and_never_replaces_judgements(judged):
    person_file = (judged / "judgements.csv").read_bytes()
    q_person = quality(judged, "--source", "person")
    n_oracle = len(JudgementStore(judged).live(source="oracle"))
    assert n_oracle == len(JudgementStore(judged).pair_ids)
    # Again: nothing added, nothing replaced.
    code, out = cli("judge", "oracle", judged, "--oracle-column", "entity_id", "--json")
    assert code == 0, out
    assert json.loads(out)["written"] == str(judged / "judgements.sqlite")
    assert len(JudgementStore(judged).live(source="oracle")) == n_oracle
    assert (judged / "judgements.csv").read_bytes() == person_file
    assert_same_content(quality(judged, "--source", "person"), q_person)
    # An oracle on another column answering differently is another rater: refused only if it
    # claims the same rater name; --out never overwrites a file.
    code, out = cli("judge", "oracle", judged, "--oracle-column", "entity_id", "--out", judged / "judgements.csv")
    assert code == 1 and "never overwrites" in out and "Traceback" not in out
    assert (judged / "judgements.csv").read_bytes() == person_file


def test_a_served_directory_is_not_drawn_into(judged):
    before = files(judged)
    lock = lock_directory(judged, "http://127.0.0.1:1/")
    try:
        code, out = draw(judged, "--force", base=P["exp"], exp=P["base"])
    finally:
        lock.close()
    assert code == 1 and "being served" in out
    after = files(judged)
    after.pop(".judging.lock", None)
    before.pop(".judging.lock", None)
    assert after == before


def test_a_file_in_the_way_and_judgements_without_a_sample(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    code, out = draw(f)
    assert code == 2 and "is a file" in out and "Traceback" not in out  # click's own check of --out
    from abcde.errors import InputError
    from abcde.quality import draw_pair_sample

    with pytest.raises(InputError, match="is a file"):  # the library's
        draw_pair_sample(P["base"], P["exp"], f, items=P["items"], budget=5, seed=1)
    assert f.read_text() == "x"
    d = tmp_path / "only-judgements"
    d.mkdir()
    (d / "judgements.csv").write_text("pair_id,judgement\nx,same\n")
    code, out = draw(d)
    assert code == 1 and "already holds" in out
    assert (d / "judgements.csv").read_text() == "pair_id,judgement\nx,same\n"


def test_files_that_do_not_belong_together_are_refused(judged, tmp_path):
    """Every command that reads a sample directory verifies it: edited metadata, changed draws,
    a file swapped in from another sample, a leftover or missing file are refused by name."""
    import shutil

    import pyarrow.parquet as pq

    other = tmp_path / "other"
    assert draw(other, base=P["exp"], exp=P["base"])[0] == 0

    def refused(d, what):
        code, out = cli("quality", d, "--source", "person")
        assert code == 1 and "does not verify" in out and what in out and "Traceback" not in out, out

    def fresh():
        d = tmp_path / f"copy{len(list(tmp_path.iterdir()))}"
        shutil.copytree(judged, d)
        return d

    # the estimator edited in the metadata (the "silently changes the estimate")
    d = fresh()
    t = pq.read_table(d / "pairs.parquet")
    meta = json.loads(t.schema.metadata[b"abcde"])
    meta["estimator"] = "paper"
    pq.write_table(t.replace_schema_metadata({b"abcde": json.dumps(meta).encode()}), d / "pairs.parquet")
    refused(d, "metadata was edited")
    # the draws changed (a label flipped), metadata untouched
    d = fresh()
    t = pq.read_table(d / "pairs.parquet")
    k = t.column_names.index("label")
    t2 = t.set_column(k, "label", pa.array([-v for v in t.column("label").to_pylist()], t.schema.field("label").type))
    pq.write_table(t2.replace_schema_metadata(t.schema.metadata), d / "pairs.parquet")
    refused(d, "draws were changed")
    # items.parquet and pairs.parquet swapped in from another sample
    d = fresh()
    shutil.copy(other / "items.parquet", d / "items.parquet")
    refused(d, "items.parquet was changed or replaced")
    d = fresh()
    shutil.copy(other / "pairs.parquet", d / "pairs.parquet")
    refused(d, "a pairs.parquet from another sample")
    # metadata.json edited, missing, or not JSON
    d = fresh()
    m = json.loads((d / "metadata.json").read_text())
    m["budget"] = 10_000
    (d / "metadata.json").write_text(json.dumps(m))
    refused(d, "metadata.json was edited after the draw")
    d = fresh()
    (d / "metadata.json").unlink()
    refused(d, "metadata.json is missing")
    # a leftover slices.parquet of another draw; a missing task file
    shutil.copy(judged / "slices.parquet", other / "slices.parquet")
    refused(other, "slices.parquet is not part of this sample")
    d = fresh()
    (d / "tasks.csv").unlink()
    refused(d, "tasks.csv is missing")


def test_a_report_refuses_a_sample_drawn_from_other_inputs(tmp_path):
    import shutil

    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    for role in ("base", "exp", "items"):
        shutil.copy(P[role], tmp_path / f"{role}.parquet")
    inputs = {r: tmp_path / f"{r}.parquet" for r in ("base", "exp", "items")}
    d = tmp_path / "pairs"
    code, out = cli("pairs", "--base", inputs["base"], "--exp", inputs["exp"], "--items", inputs["items"],
                    "--budget", 20, "--seed", 1, "--out", d)
    assert code == 0, out
    assert cli("judge", "oracle", d, "--oracle-column", "entity_id")[0] == 0
    args = ["report", "--base", inputs["base"], "--exp", inputs["exp"], "--items", inputs["items"],
            "--quality", d, "--out", tmp_path / "r.html"]
    code, out = cli(*args)
    assert code == 0, out
    items = pq.read_table(inputs["items"])
    k = items.column_names.index("weight")
    pq.write_table(items.set_column(k, "weight", pc.multiply(items.column("weight"), 2.0)), inputs["items"])
    code, out = cli(*args)
    assert code == 1 and "drawn from other inputs" in out and "items" in out and "Traceback" not in out


def test_an_export_never_overwrites_a_judgement_file(judged, tmp_path):
    kept = tmp_path / "kept.csv"
    shutil.copy(judged / "judgements.csv", kept)
    person_file = kept.read_bytes()
    code, out = cli("judge", "export", judged, "--out", kept, "--source", "oracle")
    assert code == 1 and "never overwrites" in out and "Traceback" not in out
    assert kept.read_bytes() == person_file
    code, out = cli("judge", "export", judged, "--out", kept, "--source", "person", "--force")
    assert code == 0, out


def test_a_key_in_the_base_url_is_refused_and_never_printed(tmp_path):
    from abcde.errors import InputError
    from abcde.judging import LLMJudge

    with pytest.raises(InputError, match="carries credentials") as e:
        LLMJudge(model="m", base_url="http://user:SECRETKEY@127.0.0.1:1/v1")
    assert "SECRETKEY" not in str(e.value)
    d = tmp_path / "pairs"
    assert draw(d)[0] == 0
    code, out = cli("judge", "model", d, "--model", "m", "--llm-base-url", "https://k:SECRETKEY@example.invalid/v1")
    assert code == 1 and "carries credentials" in out and "SECRETKEY" not in out and "Traceback" not in out
