"""``abcde judge raters DIR`` on an entity sample (issue 53: invites as for pairs): the raters' links
listed with the anchors each answered, a link made and revoked, never a secret in the table."""

from __future__ import annotations

import json
import subprocess
import sys

import abcde.examples as ex
from abcde.completion import EntityStore, write_entity_sample
from abcde.samples.invites import InviteBook


def _cli(*args, ok=True):
    r = subprocess.run([sys.executable, "-m", "abcde", *map(str, args)], capture_output=True, text=True)
    assert (r.returncode == 0) == ok, r.stderr + r.stdout
    return r


def test_judge_raters_lists_revokes_and_makes_links_of_an_entity_sample(tmp_path):
    P = ex.example_paths()
    s = write_entity_sample(P["base"], P["exp"], tmp_path / "s", items=P["items"], budget=10, seed=2,
                            hide=["entity_id"])
    d = json.loads(_cli("judge", "raters", s.path, "--json").stdout)
    assert d["raters"] == [] and d["invites"] is False and d["store"].endswith("entity_judgements.sqlite")
    d = json.loads(_cli("judge", "raters", s.path, "--new-link", "ann", "--new-link", "bob",
                        "--public-url", "http://judge.example:8000/", "--json").stdout)
    assert set(d["new_links"]) == {"ann", "bob"}
    assert all(v.startswith("http://judge.example:8000/join/") for v in d["new_links"].values())
    st = EntityStore(s.path)
    for t in s.tasks()[:2]:
        st.record_anchor(t["anchor"], [(m["item_id"], "same") for m in t["members"]] + [(None, "searched")],
                         rater="ann")
    d = json.loads(_cli("judge", "raters", s.path, "--json").stdout)
    rows = {r["name"]: r for r in d["raters"]}
    assert rows["ann"]["judgements"] == 2 and rows["bob"]["judgements"] == 0 and rows["ann"]["status"] == "active"
    text = _cli("judge", "raters", s.path).stdout
    assert "ann" in text and "bob" in text and "/join/" not in text  # links are printed once, when made
    d = json.loads(_cli("judge", "raters", s.path, "--revoke", "bob", "--json").stdout)
    assert d["revoked"] == ["bob"] and {r["name"]: r["status"] for r in d["raters"]}["bob"] == "revoked"


def test_the_owners_settlements_count_with_source_person_in_the_estimates_and_the_export(tmp_path):
    """Two raters differ on one member, the owner settles it: 'quality --source person' and
    'judge export --entities --source person' read it settled (not unsure), as without --source."""
    from abcde.completion import estimate_entities
    from abcde.completion.export import export_entities

    P = ex.example_paths()
    s = write_entity_sample(P["base"], P["exp"], tmp_path / "s", items=P["items"], budget=10, seed=2,
                            hide=["entity_id"])
    st = EntityStore(s.path, create=True)
    t = next(t for t in s.tasks() if t["members"])
    m0 = t["members"][0]["item_id"]
    for rater, first in (("ann", "same"), ("bob", "different")):
        rows = [(m["item_id"], first if m["item_id"] == m0 else "same") for m in t["members"]] + [(None, "searched")]
        st.record_anchor(t["anchor"], rows, rater=rater)
    assert estimate_entities(s.path, source="person").unsure_members == 1
    st.settle(t["anchor"], m0, "same")
    for source in (None, "person"):
        q = estimate_entities(s.path, source=source)
        assert q.unsure_members == 0 and q.answers["settled"] == 1, source
        out = export_entities(s.path, tmp_path / f"truth-{source}.csv", source=source)
        assert out["entities"] >= 1 and not out.get("left_out"), out
    d = json.loads(_cli("quality", s.path, "--source", "person", "--json").stdout)
    assert d["answers"]["settled"] == 1 and d["unsure_members"] == 0
    assert "1 settled by the owner" in _cli("quality", s.path, "--source", "person").stdout


def test_an_estimate_never_leaves_the_range_its_number_can_take():
    import numpy as np

    from abcde.completion.estimate import hansen_hurwitz

    h = hansen_hurwitz(np.array([-2.4]), np.array([2.4]), census=False, clip=(-1.0, 1.0), largest=1.0)
    assert (h.low, h.high, h.ci_low, h.ci_high) == (-1.0, 1.0, -1.0, 1.0)
