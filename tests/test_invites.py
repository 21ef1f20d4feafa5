"""Raters on other machines (issue 30): invite links, and no anonymous writes.

Over real HTTP (the judging server in-process on 127.0.0.1, or as a subprocess where its log and a
restart matter): without a token every route but the links and the static files is refused; a
link signs a browser in with a strict cookie and moves on to a page without the token; a rater's
name comes from their token, so nobody writes or reads as someone else; the owner's link opens
the owner's view and the export and judges nothing; a revoked link stops at once while its
judgements stay; a restarted server honours the links; the token never reaches the log or a
response body after the link; any address but loopback needs invites. The store keeps hashes
only, through its one way in, and invites never touch a judgement. A browser follows a link from
another site and judges.
"""

from __future__ import annotations

import hashlib
import html
import http.client
import json
import re
import sqlite3

import pytest
from click.testing import CliRunner

from abcde.cli import main
from abcde.errors import InputError
from abcde.judging import JudgementStore
from abcde.samples.invites import InviteBook, token_hash
from abcde.samples.raters import OWNER
from abcde.samples.sqlite_guard import StoreError
from abcde.web.judging_server import serve
from judging_helpers import assert_error, fresh_copy, make_sample, page_under_csp, split_url, start_server, stop, wait_text


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return make_sample(tmp_path_factory.mktemp("invites"))


@pytest.fixture
def invited(sample, tmp_path):
    srv = serve(fresh_copy(sample, tmp_path), raters=["alice", "bob"]).start()
    yield srv
    srv.shutdown()


class Client:
    """HTTP calls to one server that keep every answer (to check no token is in any of them)."""

    def __init__(self, url: str):
        self.url = url
        self.host, self.port = split_url(url)
        self.answers: list[tuple[str, int, dict, bytes]] = []

    def call(self, method: str, path: str, body=None, *, token: str | None = None, bearer: str | None = None,
             host: str | None = None, cookie: str | None = None):
        con = http.client.HTTPConnection(self.host, self.port, timeout=30)
        h = {"Content-Type": "application/json"} if body is not None else {}
        if token is not None:
            h["Cookie"] = f"{cookie or f'abcde_judge_{self.port}'}={token}"
        if bearer is not None:
            h["Authorization"] = f"Bearer {bearer}"
        if host is not None:
            h["Host"] = host
        con.request(method, path, body=None if body is None else json.dumps(body).encode(), headers=h)
        r = con.getresponse()
        data = r.read()
        con.close()
        headers = {}
        for k, v in r.getheaders():
            headers.setdefault(k.lower(), []).append(v)
        self.answers.append((path, r.status, headers, data))
        ctype = r.getheader("Content-Type") or ""
        return r.status, (json.loads(data) if ctype.startswith("application/json") else data.decode()), headers

    def json(self, method, path, body=None, **kw):
        code, payload, _ = self.call(method, path, body, **kw)
        return code, payload


def token_of(link: str) -> str:
    return link.rsplit("/join/", 1)[1]


def path_of(link: str) -> str:
    return "/" + link.split("/", 3)[3]


# -- who may do what ------------------------------------------------------------------------------------

#: Every route, and some that are not, as (method, path, body).
ROUTES = [("GET", "/", None), ("GET", "/owner", None), ("GET", "/api/me", None), ("GET", "/api/state", None),
          ("GET", "/api/state?rater=alice", None), ("GET", "/api/owner", None), ("GET", "/api/owner/export", None),
          ("POST", "/api/judgements", {"rater": "alice", "pair_id": "x", "judgement": "same"}),
          ("POST", "/api/undo", {"rater": "alice"}),
          # a rater's own judgements, and the owner's settle queue (issue 27)
          ("GET", "/api/mine", None), ("GET", "/api/mine?rater=alice&offset=0", None),
          ("GET", "/api/mine/pair?pair_id=x", None),
          ("POST", "/api/change", {"rater": "alice", "pair_id": "x", "judgement": "same"}),
          ("GET", "/settle", None), ("GET", "/api/owner/settle", None),
          ("POST", "/api/owner/settle", {"pair_id": "x", "judgement": "same"}),
          ("GET", "/nope", None), ("GET", "/judgements.sqlite", None),
          ("PUT", "/", None), ("DELETE", "/api/judgements", None), ("GET", "/owner/../judgements.sqlite", None)]
#: The app's own routes among them (the rest are not routes).
GUARDED = ROUTES[:16]


def test_without_a_valid_token_every_route_but_the_links_and_static_files_is_refused(invited):
    c = Client(invited.url)
    for method, path, body in ROUTES:
        code, payload, headers = c.call(method, path, body)
        assert code == 401, (method, path, code, payload)
        if method == "GET" and path in ("/", "/owner", "/settle"):  # a page a person opens: what to do, as a page
            assert headers["content-type"][0].startswith("text/html") and "invite link" in payload
            assert "judge.js" not in payload and "judge-owner.js" not in payload and "judge-settle.js" not in payload
        else:
            assert_error((code, payload), 401, "invite link")
    # a made-up or malformed token, as the cookie or as a bearer token: 403, and the cookie is cleared
    for forged in ("A" * 43, "x", "", "not a token at all", token_of(invited.links["alice"])[:-1] + "_"):
        for kw in ({"token": forged}, {"bearer": forged}):
            for method, path, body in GUARDED:
                code, payload, headers = c.call(method, path, body, **kw)
                assert code in (401, 403), (forged, kw, path, code)
                if code == 403 and "token" in kw:
                    assert any("Max-Age=0" in v for v in headers.get("set-cookie", [])), headers
    # another server's cookie name carries nothing here
    alice = token_of(invited.links["alice"])
    assert c.json("GET", "/api/me", token=alice, cookie="abcde_judge_1")[0] == 401
    # what answers without a token: the static files and the links themselves
    for path in ("/static/judge.js", "/static/common.css", "/static/judge-join.js"):
        assert c.call("GET", path)[0] == 200, path
    assert c.call("GET", "/favicon.ico")[0] == 204
    code, page, headers = c.call("GET", "/join/" + "B" * 43)
    assert code == 403 and headers["content-type"][0].startswith("text/html") and "does not work" in page
    assert "set-cookie" not in headers
    assert c.call("GET", "/join/")[0] == 404
    # nothing was written
    assert invited.session.store.live() == []


def test_a_link_sets_a_strict_cookie_and_moves_on_to_a_page_without_the_token(invited):
    c = Client(invited.url)
    link = invited.links["alice"]
    assert link.startswith(invited.url + "join/") and len(token_of(link)) == 43
    code, page, headers = c.call("GET", path_of(link))
    assert code == 200 and headers["content-type"][0].startswith("text/html")
    (cookie,) = headers["set-cookie"]
    name, _, rest = cookie.partition("=")
    value, *attrs = [a.strip() for a in rest.split(";")]
    assert name == f"abcde_judge_{invited.port}" == invited.cookie and value == token_of(link)
    attrs = {a.split("=")[0].lower(): (a.split("=", 1) + [""])[1] for a in attrs}
    assert "httponly" in attrs and attrs["samesite"].lower() == "strict" and attrs["path"] == "/"
    assert "secure" not in attrs  # plain http on loopback: a Secure cookie would not come back
    assert int(attrs["max-age"]) > 0 and "domain" not in attrs
    # the page moves on by itself to / (a navigation it starts, so the strict cookie goes along), and holds no token
    assert '<meta http-equiv="refresh" content="0; url=/">' in page and 'id="next" href="/"' in page
    assert token_of(link) not in page
    assert headers["referrer-policy"] == ["no-referrer"] and headers["cache-control"] == ["no-store"]
    for p in (page, c.call("GET", "/")[1], c.call("GET", "/join/" + "E" * 43)[1]):  # strict pages, as the others
        assert not re.search(r"<script(?![^>]*\bsrc=)", p) and "<style" not in p and " style=" not in p
        assert not re.search(r"\son[a-z]+=", p) and "http://" not in p and "https://" not in p
    # the cookie is all a browser needs from then on
    code, me = c.json("GET", "/api/me", token=value)
    assert code == 200 and me == {"ok": True, "invites": True, "role": "rater", "rater": "alice"}
    code, page, _ = c.call("GET", "/", token=value)
    assert code == 200 and "judge.js" in page
    # so does a bearer token (scripts)
    assert c.json("GET", "/api/me", bearer=value)[1]["rater"] == "alice"


def test_a_rater_cannot_write_or_read_as_another(invited):
    c = Client(invited.url)
    alice, bob = token_of(invited.links["alice"]), token_of(invited.links["bob"])
    code, st = c.json("GET", "/api/state", token=alice)
    assert code == 200 and st["rater"] == "alice" and st["next"] is not None
    pid = st["next"]["pair_id"]
    # the name comes from the token: none given, or the same, is alice; another is refused, whatever the page sends
    code, d = c.json("POST", "/api/judgements", {"pair_id": pid, "judgement": "same", "request_id": "a-1"},
                     token=alice)
    assert code == 201 and d["recorded"]["rater"] == "alice"
    for body in ({"rater": "bob", "pair_id": pid, "judgement": "different"},
                 {"rater": "Alice", "pair_id": pid, "judgement": "different"},
                 {"rater": "owner", "pair_id": pid, "judgement": "different"},
                 {"rater": ["bob"], "pair_id": pid, "judgement": "different"}):
        assert_error(c.json("POST", "/api/judgements", body, token=alice), 403, "signed in as 'alice'")
    assert_error(c.json("GET", "/api/state?rater=bob", token=alice), 403, "signed in as 'alice'")
    assert_error(c.json("POST", "/api/undo", {"rater": "bob"}, token=alice), 403, "signed in as 'alice'")
    # bob judges as bob, with his own token; alice's undo withdraws only hers
    code, st = c.json("GET", "/api/state", token=bob)
    assert c.json("POST", "/api/judgements", {"rater": "bob", "pair_id": st["next"]["pair_id"],
                                             "judgement": "different"}, token=bob)[0] == 201
    code, d = c.json("POST", "/api/undo", {}, token=alice)
    assert code == 200 and d["undone"]["rater"] == "alice"
    assert_error(c.json("POST", "/api/undo", {}, token=alice), 409, "no judgement to undo")
    live = invited.session.store.live()
    assert [(j.rater, j.judgement) for j in live] == [("bob", "different")]
    # a rater does not see the owner's view, nor the settle queue (other raters' answers)
    for path in ("/owner", "/settle", "/api/owner", "/api/owner/export", "/api/owner/settle"):
        code, payload, headers = c.call("GET", path, token=alice)
        assert code == 403 and "owner's invite link" in (html.unescape(payload) if isinstance(payload, str)
                                                         else payload["error"])
    assert c.call("GET", "/owner", token=alice)[2]["content-type"][0].startswith("text/html")


def test_a_rater_lists_opens_and_changes_only_their_own_and_only_the_owner_settles(invited):
    """Issue 27 through the same guards: a rater's own judgements are theirs (the name comes from the
    token); the settle queue is the owner's (owner_only), whose vote is recorded as the rater 'owner'."""
    c = Client(invited.url)
    alice, bob, owner = (token_of(invited.links[n]) for n in ("alice", "bob", OWNER))
    pids = {}
    for name, token, answer in (("alice", alice, "same"), ("bob", bob, "different")):
        pid = c.json("GET", "/api/state", token=token)[1]["next"]["pair_id"]
        assert c.json("POST", "/api/judgements", {"pair_id": pid, "judgement": answer}, token=token)[0] == 201
        pids[name] = pid
    # alice lists and opens her own; another's name is a 403, another's pair is not hers (404)
    code, mine = c.json("GET", "/api/mine", token=alice)
    assert code == 200 and mine["rater"] == "alice" and [j["pair_id"] for j in mine["judgements"]] == [pids["alice"]]
    assert mine["judgements"][0]["judgement"] == "same" and mine["total"] == 1
    assert_error(c.json("GET", "/api/mine?rater=bob", token=alice), 403, "signed in as 'alice'")
    assert_error(c.json("GET", f"/api/mine/pair?pair_id={pids['bob']}&rater=bob", token=alice), 403, "signed in as")
    if pids["bob"] != pids["alice"]:
        assert_error(c.json("GET", f"/api/mine/pair?pair_id={pids['bob']}", token=alice), 404, "no judgement")
        assert_error(c.json("POST", "/api/change", {"pair_id": pids["bob"], "judgement": "same"}, token=alice), 404,
                     "no judgement")
    code, opened = c.json("GET", f"/api/mine/pair?pair_id={pids['alice']}", token=alice)
    assert code == 200 and opened["judgement"]["judgement"] == "same" and opened["pair"]["pair_id"] == pids["alice"]
    # she changes hers, never bob's
    assert_error(c.json("POST", "/api/change", {"rater": "bob", "pair_id": pids["bob"], "judgement": "same"},
                        token=alice), 403, "signed in as 'alice'")
    code, d = c.json("POST", "/api/change", {"pair_id": pids["alice"], "judgement": "unsure"}, token=alice)
    assert code == 200 and d["changed"] and d["now"]["rater"] == "alice" and d["was"]["judgement"] == "same"
    assert {(j.rater, j.judgement) for j in invited.session.store.live()} == {("alice", "unsure"), ("bob", "different")}
    # the owner's link has no judgements of its own to list or change
    for method, path, body in (("GET", "/api/mine", None), ("GET", f"/api/mine/pair?pair_id={pids['alice']}", None),
                               ("POST", "/api/change", {"pair_id": pids["alice"], "judgement": "same"})):
        assert_error(c.json(method, path, body, token=owner), 403, "does not judge")
    # the settle queue: the owner's page and API; raters get 403 (a page where a person opens one)
    for token in (alice, bob):
        code, page, headers = c.call("GET", "/settle", token=token)
        assert code == 403 and headers["content-type"][0].startswith("text/html") and "judge-settle.js" not in page
        assert_error(c.json("GET", "/api/owner/settle", token=token), 403, "owner's invite link")
        assert_error(c.json("POST", "/api/owner/settle", {"pair_id": pids["alice"], "judgement": "same"},
                            token=token), 403, "owner's invite link")
    code, page, _ = c.call("GET", "/settle", token=owner)
    assert code == 200 and "judge-settle.js" in page
    code, q = c.json("GET", "/api/owner/settle", token=owner)
    assert code == 200 and q["waiting_total"] == 0  # no pair has two raters' votes yet
    assert_error(c.json("POST", "/api/owner/settle", {"pair_id": pids["alice"], "judgement": "same"}, token=owner),
                 409, "nothing to settle")
    # bob judges alice's pair the other way: two votes that tie; the owner's vote settles it
    pid = pids["alice"]
    if pid != pids["bob"]:
        assert c.json("POST", "/api/judgements", {"pair_id": pid, "judgement": "different"}, token=bob)[0] == 201
    assert c.json("POST", "/api/change", {"pair_id": pid, "judgement": "same"}, token=alice)[0] == 200
    code, q = c.json("GET", "/api/owner/settle", token=owner)
    assert q["waiting_total"] == 1 and q["waiting"][0]["pair"]["pair_id"] == pid
    assert sorted(v["judgement"] for v in q["waiting"][0]["votes"]) == ["different", "same"]
    code, d = c.json("POST", "/api/owner/settle", {"pair_id": pid, "judgement": "same"}, token=owner)
    assert code == 201 and d["vote"]["rater"] == OWNER and d["waiting_total"] == 0 and d["settled_total"] == 1
    assert d["settled"][0]["result"] == "same"
    live = invited.session.store.live()
    assert sorted((j.rater, j.judgement) for j in live if j.pair_id == pid) == [("alice", "same"), ("bob", "different"),
                                                                                 (OWNER, "same")]


def test_the_owner_link_opens_the_owner_view_and_the_export_and_judges_nothing(invited):
    c = Client(invited.url)
    alice, owner = token_of(invited.links["alice"]), token_of(invited.links[OWNER])
    code, page, _ = c.call("GET", path_of(invited.links[OWNER]))
    assert code == 200 and '<meta http-equiv="refresh" content="0; url=/owner">' in page and owner not in page
    pid = c.json("GET", "/api/state", token=alice)[1]["next"]["pair_id"]
    assert c.json("POST", "/api/judgements", {"pair_id": pid, "judgement": "same", "comment": "=HYPERLINK(\"x\")"},
                  token=alice)[0] == 201
    code, page, _ = c.call("GET", "/owner", token=owner)
    assert code == 200 and "judge-owner.js" in page and "/api/owner/export" in page
    code, st = c.json("GET", "/api/owner", token=owner)
    assert code == 200 and st["judgements"] == 1 and "estimates" in st
    code, csv, headers = c.call("GET", "/api/owner/export", token=owner)
    assert code == 200 and headers["content-type"][0].startswith("text/csv")
    assert "attachment" in headers["content-disposition"][0]
    lines = csv.strip().splitlines()
    # A cell neutralised with a leading ' marks its row (abcde_formula_mark), so abcde undoes only its own marks.
    assert lines[0] == ('"pair_id","item_a","item_b","judgement","rater","source","comment","timestamp",'
                        '"abcde_formula_mark"')
    assert len(lines) == 2 and f'"{pid}"' in lines[1] and '"alice"' in lines[1] and '"same"' in lines[1]
    assert '"\'=HYPERLINK(""x"")"' in lines[1]  # a rater's comment never runs as a formula in the owner's spreadsheet
    # the owner judges nothing, and reads no rater's next pair
    code, me = c.json("GET", "/api/me", token=owner)
    assert me == {"ok": True, "invites": True, "role": "owner", "rater": None}
    code, st = c.json("GET", "/api/state", token=owner)
    assert code == 200 and "next" not in st and st["judgements"] == 1
    assert_error(c.json("GET", "/api/state?rater=alice", token=owner), 403, "does not judge")
    for body in ({"pair_id": pid, "judgement": "same"}, {"rater": "alice", "pair_id": pid, "judgement": "same"}):
        assert_error(c.json("POST", "/api/judgements", body, token=owner), 403, "does not judge")
    assert_error(c.json("POST", "/api/undo", {}, token=owner), 403, "does not judge")
    assert_error(c.json("POST", "/api/undo", {"rater": "alice"}, token=owner), 403, "does not judge")
    assert len(invited.session.store.live()) == 1


def cli(*args, code: int = 0):
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exit_code == code, r.output
    return r.output


def test_a_revoked_link_stops_at_once_and_its_judgements_stay(invited):
    c = Client(invited.url)
    d = invited.session.sample_dir
    bob, owner = token_of(invited.links["bob"]), token_of(invited.links[OWNER])
    for k in range(2):
        pid = c.json("GET", "/api/state", token=bob)[1]["next"]["pair_id"]
        assert c.json("POST", "/api/judgements", {"pair_id": pid, "judgement": "same"}, token=bob)[0] == 201
    before = [(j.id, j.pair_id, j.judgement, j.rater, j.created_at) for j in invited.session.store.live()]
    out = cli("judge", "raters", d, "--revoke", "bob")  # another "process" on the served directory
    assert "revoked the invite link of 'bob'" in out and "its judgements stay" in out
    # at once, on the running server: every route refuses bob (his page too)
    for method, path, body in GUARDED:
        code, _, _ = c.call(method, path, body, token=bob)
        assert code == 403, (path, code)
    assert c.call("GET", path_of(invited.links["bob"]))[0] == 403
    # his judgements stay, count, and are exported
    assert [(j.id, j.pair_id, j.judgement, j.rater, j.created_at) for j in invited.session.store.live()] == before
    st = c.json("GET", "/api/owner", token=owner)[1]
    assert st["judgements"] == 2
    assert c.call("GET", "/api/owner/export", token=owner)[1].count('"bob"') == 2
    rows = {r["name"]: r for r in json.loads(cli("judge", "raters", d, "--json"))["raters"]}
    assert rows["bob"]["status"] == "revoked" and rows["bob"]["judgements"] == 2 and rows["bob"]["revoked"]
    assert rows["alice"]["status"] == "active" and rows[OWNER]["role"] == "owner"
    assert all(r["link"] is None for r in rows.values())  # no secret is shown again
    # a new link for bob works, the old one still does not; his judgements are still his
    new = json.loads(cli("judge", "raters", d, "--new-link", "bob", "--json"))["new_links"]["bob"]
    assert new.startswith(invited.url + "join/") and token_of(new) != bob
    assert c.call("GET", path_of(new))[0] == 200
    assert c.json("GET", "/api/state", token=token_of(new))[1]["rater_judgements"] == 2
    assert c.json("GET", "/api/me", token=bob)[0] == 403
    # a new link replaces a lost one: the old stops
    alice = token_of(invited.links["alice"])
    new_alice = json.loads(cli("judge", "raters", d, "--new-link", "alice", "--json"))["new_links"]["alice"]
    assert c.json("GET", "/api/me", token=alice)[0] == 403
    assert c.json("GET", "/api/me", token=token_of(new_alice))[1]["rater"] == "alice"


def test_revoking_the_owner_link_and_a_new_one(invited):
    c = Client(invited.url)
    d = invited.session.sample_dir
    owner = token_of(invited.links[OWNER])
    cli("judge", "raters", d, "--revoke", "owner")
    assert c.json("GET", "/api/owner", token=owner)[0] == 403
    new = json.loads(cli("judge", "raters", d, "--new-link", "owner", "--json"))["new_links"][OWNER]
    assert c.json("GET", "/api/owner", bearer=token_of(new))[0] == 200


def test_a_second_server_on_the_directory_makes_no_link(invited):
    """The directory's serving lock comes first: a second 'judge serve --raters' is refused, and
    adds no invite link (nor prints one)."""
    from abcde.judging import StoreLockedError

    with pytest.raises(StoreLockedError, match="already being served"):
        serve(invited.session.sample_dir, raters=["mallory"])
    assert [i.name for i in InviteBook(invited.session.store).invites()] == ["alice", "bob", OWNER]


def test_the_raters_table_and_its_errors(invited):
    d = invited.session.sample_dir
    out = cli("judge", "raters", d)
    assert "Raters and invite links" in out and "alice" in out and "bob" in out and "owner" in out
    assert "active" in out and "/join/" not in out and "Invites are on" in out
    for link in invited.links.values():
        assert token_of(link) not in out
    j = json.loads(cli("judge", "raters", d, "--json"))
    assert j["invites"] is True and j["link_base"] == invited.url and j["revoked"] == [] and j["new_links"] == {}
    assert [r["name"] for r in j["raters"]] == ["alice", "bob", "owner"]
    assert set(j["raters"][0]) == {"name", "role", "status", "link_made", "revoked", "judgements", "link"}
    # errors: one line naming what was expected
    for args, words in [(("--revoke", "zoe"), ["'zoe'", "alice, bob, owner"]),
                        (("--revoke", "bob", "--new-link", "bob"), ["'bob'", "--new-link"]),
                        (("--new-link", "<b>"), ["'<b>'", "rater name"]),
                        (("--new-link", "Owner"), ["'Owner'", "owner's link"]),
                        (("--new-link", "cy", "--public-url", "https://x.example/sub/"), ["--public-url"])]:
        out = cli("judge", "raters", d, *args, code=1)
        lines = [ln for ln in out.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("Error: ") and all(w in out for w in words), out
    assert [i.name for i in InviteBook(invited.session.store).invites()] == ["alice", "bob", OWNER]  # nothing was made


def test_a_restart_honours_the_links_and_no_token_reaches_the_log_or_a_body(sample, tmp_path):
    d = fresh_copy(sample, tmp_path)
    log = tmp_path / "server.log"
    raters = tmp_path / "raters.txt"
    raters.write_text("# the team\nalice\n\nbob\n")
    proc, info = start_server(d, log, "--raters", str(raters), "--verbose")
    tokens = set()
    try:
        assert info["invites"] is True and set(info["links"]) == {"alice", "bob", OWNER}
        tokens = {token_of(v) for v in info["links"].values()}
        assert [r["name"] for r in info["raters"]] == ["alice", "bob", OWNER]
        c = Client(info["url"])
        alice = token_of(info["links"]["alice"])
        assert c.call("GET", path_of(info["links"]["alice"]))[0] == 200  # the one answer that sets the cookie
        c.answers.clear()
        st = c.json("GET", "/api/state", token=alice)[1]
        assert c.json("POST", "/api/judgements", {"pair_id": st["next"]["pair_id"], "judgement": "same"},
                      token=alice)[0] == 201
        for method, path, body in ROUTES:
            c.call(method, path, body, token=alice)
        c.call("GET", path_of(info["links"]["bob"]))
        c.call("GET", "/join/" + alice[:-2])  # a mistyped link: refused, and not echoed
        for method, path, body in ROUTES[:4]:
            c.call(method, path, body)
    finally:
        stop(proc)
    # a restart without --raters: invites stay on, the links and cookies work, no link is printed again
    proc, info2 = start_server(d, log, "--verbose")
    try:
        assert info2["invites"] is True and info2["links"] == {}
        assert {r["name"]: r["status"] for r in info2["raters"]} == {"alice": "active", "bob": "active",
                                                                      OWNER: "active"}
        c2 = Client(info2["url"])
        assert c2.json("GET", "/api/me", token=alice)[1]["rater"] == "alice"
        assert c2.json("GET", "/api/state", token=alice)[1]["rater_judgements"] == 0  # the undo among ROUTES
        assert c2.call("GET", "/join/" + token_of(info["links"]["bob"]))[0] == 200
        assert c2.json("GET", "/api/owner", bearer=token_of(info["links"][OWNER]))[0] == 200
        assert c2.json("GET", "/api/state")[0] == 401
        c.answers += c2.answers
    finally:
        stop(proc)
    # no token in any answer (body or header) after the link, nor in the log
    assert len(c.answers) > 20
    for path, code, headers, body in c.answers:
        text = body.decode("utf-8", "replace") + json.dumps(headers)
        if path.startswith("/join/") and code == 200:
            text = body.decode()  # its Set-Cookie carries the token: that is the cookie
        for t in tokens:
            assert t not in text, (path, code)
    logged = log.read_text()
    assert '"GET /join/[token hidden] HTTP/1.1" 200' in logged and '"GET /api/state HTTP/1.1" 200' in logged
    for t in tokens:
        assert t not in logged and t[:12] not in logged
    # the store holds no token, only their hashes
    data = b"".join(p.read_bytes() for p in d.glob("judgements.sqlite*") if p.is_file())
    for t in tokens:
        assert t.encode() not in data
        assert token_hash(t).encode() in data


def test_loopback_without_raters_is_todays_behaviour_until_the_first_link(sample, tmp_path):
    srv = serve(fresh_copy(sample, tmp_path)).start()
    try:
        assert srv.invites_on is False and srv.links == {}
        c = Client(srv.url)
        assert c.json("GET", "/api/me")[1] == {"ok": True, "invites": False, "role": None, "rater": None}
        st = c.json("GET", "/api/state?rater=ann")[1]
        assert c.json("POST", "/api/judgements", {"rater": "ann", "pair_id": st["next"]["pair_id"],
                                                 "judgement": "same"})[0] == 201
        assert c.json("GET", "/api/owner")[0] == 200 and c.call("GET", "/owner")[0] == 200
        assert_error(c.json("POST", "/api/judgements", {"pair_id": "x", "judgement": "same"}), 400, "'rater'")
        assert c.call("GET", "/join/" + "C" * 43)[0] == 403  # no invites: no link works
        # the first link made (another process, on the running server) turns invites on, for good
        link = json.loads(cli("judge", "raters", srv.session.sample_dir, "--new-link", "carol", "--json"))
        carol = token_of(link["new_links"]["carol"])
        assert link["new_links"]["carol"] == "/join/" + carol  # no server with invites gave its address yet
        assert_error(c.json("GET", "/api/state?rater=ann"), 401, "invite link")
        assert c.json("GET", "/api/state", token=carol)[1]["rater"] == "carol"
        rows = {r["name"]: r for r in json.loads(cli("judge", "raters", srv.session.sample_dir, "--json"))["raters"]}
        assert rows["ann"]["status"] == "no link" and rows["ann"]["judgements"] == 1
        cli("judge", "raters", srv.session.sample_dir, "--revoke", "carol")
        assert c.json("GET", "/api/state?rater=ann")[0] == 401  # revoking everyone locks everyone out
    finally:
        srv.shutdown()


def test_any_address_but_loopback_needs_invites(sample, tmp_path):
    d = fresh_copy(sample, tmp_path)
    for host in ("0.0.0.0", "::", "192.0.2.7", "judge.example.org", ""):
        with pytest.raises(InputError, match="--raters NAME,NAME"):
            serve(d, host=host)
    assert not (d / "judgements.sqlite").exists()  # refused before anything was opened
    r = CliRunner().invoke(main, ["judge", "serve", str(d), "--host", "0.0.0.0", "--port", "0"])
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert r.exit_code == 1 and len(lines) == 1 and "--raters" in lines[0] and "'0.0.0.0'" in lines[0], r.output
    # with invites it serves on every interface; links name this machine, and every request needs one
    srv = serve(d, host="0.0.0.0", raters=["alice"]).start()
    try:
        assert srv.invites_on and "0.0.0.0" not in srv.links["alice"]
        c = Client(f"http://127.0.0.1:{srv.port}/")
        assert c.json("GET", "/api/state")[0] == 401
        assert c.json("GET", "/api/state", token=token_of(srv.links["alice"]))[1]["rater"] == "alice"
    finally:
        srv.shutdown()
    # once the sample has invites, a server elsewhere needs no --raters (the store's links count)
    srv = serve(d, host="0.0.0.0").start()
    try:
        assert srv.invites_on and srv.links == {}
        assert Client(f"http://127.0.0.1:{srv.port}/").json("GET", "/api/me")[0] == 401
    finally:
        srv.shutdown()


def test_behind_a_tls_proxy_links_start_with_the_public_url(sample, tmp_path):
    srv = serve(fresh_copy(sample, tmp_path), raters=["alice"], public_url="https://Judge.Example.org").start()
    try:
        assert srv.links["alice"].startswith("https://Judge.Example.org/join/")
        assert InviteBook(JudgementStore(srv.session.sample_dir)).link_base() == "https://Judge.Example.org/"
        c = Client(srv.url)
        path = path_of(srv.links["alice"])
        # the proxy passes the public name on: it passes the Host check; other names still do not
        for host in ("judge.example.org", "judge.example.org:443", f"127.0.0.1:{srv.port}"):
            code, _, headers = c.call("GET", path, host=host)
            assert code == 200, host
        assert "secure" in headers["set-cookie"][0].lower()  # https: the cookie goes over TLS only
        assert_error(c.json("GET", "/api/me", host="evil.example"), 403, "own address")
        assert_error(c.json("GET", "/api/me", host="judge.example.org:8443"), 403, "own address")
    finally:
        srv.shutdown()
    for bad in ("ftp://x.example/", "https://x.example/judge", "https://u:p@x.example/", "https://x.example/?a=1",
                "x.example", "https://:8/", "https://x.example:99999/"):
        with pytest.raises(InputError, match="--public-url"):
            serve(srv.session.sample_dir, raters=["a"], public_url=bad)


# -- the store: hashes only, one way in, never a judgement -----------------------------------------------

def test_invites_keep_hashes_only_and_never_touch_judgements(sample, tmp_path):
    d = fresh_copy(sample, tmp_path)
    store = JudgementStore(d)
    book = InviteBook(store)
    assert book.invites() == [] and book.has_invites() is False and book.invite_for("A" * 43) is None
    pids = store.pair_ids[:3]
    for p in pids:
        store.record(p, "same", rater="bob")

    def judgements():
        con = sqlite3.connect(d / "judgements.sqlite")
        try:
            return con.execute("SELECT * FROM judgements ORDER BY id").fetchall()
        finally:
            con.close()

    before = judgements()
    made = book.invite(["alice", "bob", OWNER])
    assert [(i.name, i.role, i.active) for i in made] == [("alice", "rater", True), ("bob", "rater", True),
                                                          (OWNER, "owner", True)]
    assert all(i.token and len(i.token) == 43 for i in made) and "token" not in made[0].to_dict()
    assert "token" not in repr(made[0]) and made[0].token not in repr(made[0])
    assert book.invite_for(made[1].token).name == "bob" and book.invite_for(made[2].token).role == "owner"
    # made again: the same links (no token: not shown again); replace: a new one, the old revoked
    again = book.invite(["alice", "carol"])
    assert again[0].token is None and again[0].created_at == made[0].created_at and again[1].token
    new = book.invite(["alice"], replace=True)[0]
    assert book.invite_for(made[0].token) is None and book.invite_for(new.token).name == "alice"
    book.revoke(["bob"])
    assert book.invite_for(made[1].token) is None
    with pytest.raises(InputError, match="No active invite link for 'bob'"):
        book.revoke(["bob"])
    with pytest.raises(InputError, match="'zoe'"):
        book.revoke(["carol", "zoe"])  # all or none
    assert book.invite_for(again[1].token).name == "carol"
    for bad in (["ok", "<b>"], ["x", "x"], ["Owner"], [""]):
        with pytest.raises(InputError):
            book.invite(bad)
    assert "ok" not in {i.name for i in book.invites()}  # all or none
    assert judgements() == before  # never a judgement read into or written
    con = sqlite3.connect(d / "judgements.sqlite")
    rows = con.execute("SELECT name, role, token_sha256, revoked_at IS NOT NULL FROM invites ORDER BY id").fetchall()
    con.close()
    assert [(n, r, rev) for n, r, _, rev in rows] == [("alice", "rater", 1), ("bob", "rater", 1), (OWNER, "owner", 0),
                                                      ("carol", "rater", 0), ("alice", "rater", 0)]
    assert rows[2][2] == hashlib.sha256(made[2].token.encode()).hexdigest()
    # not tokens: never looked up
    for junk in (None, 7, "", "short", "A" * 200, made[2].token + "\n", "é" * 43):
        assert book.invite_for(junk) is None
    # the one way in: a store replaced under a running command stops it, for invites as for judgements
    (d / "judgements.sqlite").rename(d / "moved.sqlite")
    JudgementStore(d)  # a new, empty store in its place
    with pytest.raises(StoreError, match="moved or replaced"):
        book.invite_for(made[2].token)
    with pytest.raises(StoreError, match="moved or replaced"):
        book.invite(["dan"])


def test_the_raters_file(tmp_path):
    from abcde.cli.judge import read_raters

    f = tmp_path / "team.txt"
    f.write_text("\ufeff# raters\nalice\n  bob  \n\ncarol\n", encoding="utf-8")
    assert read_raters(str(f)) == ["alice", "bob", "carol"]
    assert read_raters("alice, bob ,carol,") == ["alice", "bob", "carol"]
    for value, words in [(str(tmp_path / "nope.txt"), "does not exist"), (str(tmp_path), "not a file"),
                         ("a,a", "'a' twice"), ("a,owner", "owner's link"), ("a,<b>", "'<b>'"), (",", "names no rater"),
                         ("/dev/zero", "not a file")]:
        with pytest.raises(InputError, match=re.escape(words)):
            read_raters(value)
    big = tmp_path / "big.txt"
    big.write_bytes(b"a\n" * (1 << 20))
    with pytest.raises(InputError, match="larger than 1 MB"):
        read_raters(str(big))


# -- a browser: a rater follows their link from another site, and judges --------------------------------

def test_a_rater_follows_their_link_from_another_site_and_judges(browser, sample, tmp_path):
    srv = serve(fresh_copy(sample, tmp_path), raters=["alice"]).start()
    try:
        link = srv.links["alice"]
        with page_under_csp(browser) as page:
            # the invite arrives in web mail: another site (localhost is not 127.0.0.1), whose page links to it
            page.route("http://localhost:9/**", lambda route: route.fulfill(
                content_type="text/html", body=f'<p>Your invite: <a id="invite" href="{link}">judge pairs</a></p>'))
            page.goto("http://localhost:9/mail")
            page.click("#invite")
            page.wait_for_url(srv.url)  # moved on, without the token
            page.wait_for_selector("#pair-body tr")
            assert page.url == srv.url and token_of(link) not in page.url
            assert page.inner_text("#signed-in") == "Judging as alice"
            assert not page.is_visible("#rater") and not page.is_visible("#owner-note")
            assert page.evaluate("document.cookie") == ""  # HttpOnly: no script reads the token
            (cookie,) = [k for k in page.context.cookies() if k["name"] == srv.cookie]
            assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/"
            for n, key in enumerate(("s", "d"), 1):
                pid = page.get_attribute("#pair", "data-pair-id")
                page.keyboard.press(key)
                page.wait_for_selector(f"body[data-acks='{n}']")
                assert page.get_attribute("#pair", "data-pair-id") not in ("", pid)
            # Back does not return to the link (it was replaced in the history)
            page.go_back()
            assert "/join/" not in page.url
            assert page.problems == []
        assert [(j.rater, j.judgement) for j in srv.session.store.live()] == [("alice", "same"),
                                                                            ("alice", "different")]
        with page_under_csp(browser) as page:
            # without the link: the page says what to do, and loads no judging script
            resp = page.goto(srv.url)
            assert resp.status == 401 and "invite link" in page.inner_text("#signin")
            resp = page.goto(srv.url + "join/" + "D" * 43)
            assert resp.status == 403 and "does not work" in page.inner_text("#signin")
            # the owner's link: the owner's page with its numbers; the judging page says it does not judge
            page.goto(srv.links[OWNER])
            page.wait_for_url(srv.url + "owner")
            page.wait_for_selector("#raters-body tr")
            wait_text(page, "#progress-text", "2 / 30")
            page.goto(srv.url)
            page.wait_for_selector("#owner-note:not([hidden])")
            assert page.inner_text("#signed-in") == "Signed in as the owner" and not page.is_visible("#judge")
            assert [p for p in page.problems if "401" not in p and "403" not in p] == []
    finally:
        srv.shutdown()


def test_the_owners_view_names_the_raters_the_owner_invited(sample, tmp_path):
    """The owner invited alice and bob by name (issue 38): the owner's view and the settle queue call them
    so, not "rater 1", "rater 2"; a rater who judged without an invite (before the first link) stays
    "rater N" unless the server shows raters; a rater still sees no other rater's name."""
    from abcde.judging import JudgingSession

    d = fresh_copy(sample, tmp_path)
    s = JudgingSession(d, replicate=1.0, seed=3)
    pids = s.pair_ids[:4]
    for pid in pids:  # judged on loopback before any invite
        s.store.record(pid, "same", rater="carol")
    InviteBook(s.store).invite(["alice", "bob", OWNER])
    for who, answer in (("alice", "same"), ("bob", "different")):
        for pid in s.pair_ids[:6]:  # the last two tie: the settle queue
            s.store.record(pid, answer, rater=who)
    owner = s.owner_state()
    assert owner["raters"] == ["alice", "bob", "rater 1"] and "carol" not in json.dumps(owner)
    assert [(r["rater"], r["judgements"]) for r in owner["rater_progress"]] == [("rater 1", 4), ("alice", 6),
                                                                                ("bob", 6)]
    assert {tuple(sorted(c["raters"])) for c in owner["agreement"]["cohen"]} == {
        ("alice", "rater 1"), ("bob", "rater 1"), ("alice", "bob")}
    queue = s.settle_state()
    assert queue["waiting_total"] == 2
    votes = [v["rater"] for p in queue["waiting"] for v in p["votes"]]
    assert {"alice", "bob"} <= set(votes) and "carol" not in votes
    st = s.state("alice")
    assert "bob" not in json.dumps(st) and "carol" not in json.dumps(st)
    InviteBook(s.store).revoke(["bob"])  # a revoked link: still the name the owner gave
    assert JudgingSession(d).owner_state()["raters"] == ["alice", "bob", "rater 1"]
