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
