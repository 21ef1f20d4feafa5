"""``abcde judge oracle|serve|raters|model|export``: collecting the judgements of a pair sample
(:mod:`abcde.quality.oracle`, :mod:`abcde.judging`, :mod:`abcde.web.judging_server`), and who may
judge on a served sample (invite links, :mod:`abcde.samples.store`)."""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from pathlib import Path

import click

from abcde.cli.options import json_option
from abcde.cli.tables import console, emit_json, handle_errors, safe_text
from abcde.errors import AbcdeError, InputError

#: The largest raters file ``--raters FILE`` reads (one name a line).
MAX_RATERS_FILE = 1 << 20


def read_raters(value: str) -> list[str]:
    """``--raters``: names separated by commas (``alice,bob``), or a file of names, one a line
    (blank lines and lines starting with ``#`` skipped). A value naming an existing path is a
    file; so is one without a comma that holds a path separator or a file extension. Each name is
    checked as a rater name; a name twice, ``owner`` (the owner's link) or no name at all is
    refused in one line."""
    from abcde.samples.raters import OWNER, check_invite_name  # lazy: start-up time
    from abcde.util.files import read_small_text  # lazy: start-up time

    path = Path(value)
    looks_like_a_file = "," not in value and (os.sep in value or path.suffix.lower() in (".txt", ".csv", ".lst",
                                                                                        ".list"))
    if os.path.lexists(value) or looks_like_a_file:
        where = f"The raters file '{value}'"
        if not path.exists():
            raise InputError(f"{where} does not exist. --raters takes names separated by commas (alice,bob) or a "
                             "file with one name a line.")
        if not path.is_file():
            raise InputError(f"'{value}' is not a file. --raters takes names separated by commas (alice,bob) or a "
                             "file with one name a line.")
        text = read_small_text(path, limit=MAX_RATERS_FILE, where=where, expected="expected one rater name a line")
        names = [ln.strip() for ln in text.splitlines()]
        names = [n for n in names if n and not n.startswith("#")]
    else:
        where = f"--raters {value!r}"
        names = [n.strip() for n in value.split(",") if n.strip()]
    if not names:
        raise InputError(f"{where} names no rater; expected names such as alice,bob (in a file: one a line).")
    for n in names:
        if n == OWNER:
            raise InputError(f"{where}: {OWNER!r} is the owner's link, made with every --raters; give the rater "
                             "another name.")
        try:
            check_invite_name(n)
        except InputError as exc:
            raise InputError(f"{where}: {exc}") from None
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InputError(f"{where} names {twice[0]!r} twice; each rater gets one link.")
    return names


def _when(ts: str | None) -> str:
    """A stored time (ISO 8601, UTC) as a person reads it: ``2025-03-01 14:02 UTC``."""
    return "" if not ts else ts[:16].replace("T", " ") + " UTC"


def invite_rows(invites, counts: dict, links: dict) -> list[dict]:
    """One row per name with an invite link (its live link, else its latest), then the raters
    who judged without one: name, role, status, link made, revoked, judgements, link (made now)."""
    latest: dict = {}
    for inv in invites:
        if inv.active or inv.name not in latest or not latest[inv.name].active:
            latest[inv.name] = inv
    rows = []
    for name, inv in latest.items():
        rows.append({"name": name, "role": inv.role, "status": "active" if inv.active else "revoked",
                     "link_made": inv.created_at, "revoked": inv.revoked_at,
                     "judgements": counts.get(name, 0) if inv.role == "rater" else None,
                     "link": links.get(name)})
    for name, n in counts.items():
        if name not in latest:
            rows.append({"name": name, "role": "rater", "status": "no link", "link_made": None, "revoked": None,
                         "judgements": n, "link": None})
    return rows


def print_invites(rows: list[dict], sample_dir, *, invites_on: bool) -> None:
    """The raters' table (no secrets), then each link made now on its own line (whole, to copy)."""
    from abcde.cli.tables import new_table  # lazy: start-up time

    con = console()
    if not rows:
        con.print(f"No invite links for {sample_dir}: 'abcde judge serve {sample_dir} --raters alice,bob' makes them.")
        return
    t = new_table(title="Raters and invite links", title_justify="left", header_style="bold")
    for col in ("name", "role", "status", "link made", "revoked", "judgements"):
        t.add_column(col, justify="right" if col == "judgements" else "left", overflow="fold")
    for r in rows:
        t.add_row(r["name"], r["role"], r["status"], _when(r["link_made"]), _when(r["revoked"]),
                  "" if r["judgements"] is None else f"{r['judgements']:,}")
    con.print(t)
    made = [r for r in rows if r["link"]]
    if made:
        click.echo("New invite links (each signs a browser in as its name: send each person only their own; shown "
                   "this once, the store keeps only a hash):")
        width = max(len(safe_text(r["name"])) for r in made)
        for r in made:
            note = "   (the owner's view and the export)" if r["role"] == "owner" else ""
            click.echo(f"  {safe_text(r['name']):<{width}}  {r['link']}{note}")
    kept = [r["name"] for r in rows if r["status"] == "active" and not r["link"]]
    if kept:
        click.echo(f"Links made earlier ({', '.join(map(safe_text, kept))}) still work and are not shown again; "
                   f"'abcde judge raters {safe_text(sample_dir)} --new-link NAME' replaces one.")
    if invites_on:
        click.echo("Invites are on: every request needs a link (revoked ones stop at once, their judgements stay).")


class _JudgeGroup(click.Group):
    """``abcde judge DIR --oracle-column COL`` (the first form) still means ``abcde judge oracle ...``."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["oracle", *args]
        return super().parse_args(ctx, args)


@click.group(cls=_JudgeGroup)
def judge():
    """Collect judgements of a pair sample: people (web app), a model or LLM, or an oracle.

    Judgements of every source live in SAMPLE_DIR/judgements.sqlite, each with its source;
    'abcde quality SAMPLE_DIR --source person|model|oracle' estimates from one source.
    """


@judge.command("oracle")
@click.argument("sample_dir", type=click.Path(file_okay=False))
@click.option("--oracle-column", required=True,
              help="Items attribute holding the ground truth: equal values ⇒ same; null ⇒ unsure.")
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="Write a judgement file (which must not exist) instead of adding to the store "
                   "SAMPLE_DIR/judgements.sqlite.")
@json_option
@handle_errors
def judge_oracle(sample_dir, oracle_column, out, as_json):
    """Fill a pair sample's judgements from a ground-truth column (oracle judge); on an entity sample
    ('abcde entities'), complete every anchor's entity from it, the search outside both clusters
    included."""
    from abcde.completion import is_entity_sample  # lazy: start-up time

    if is_entity_sample(sample_dir):
        return _oracle_entities(sample_dir, oracle_column, out, as_json)
    from abcde.samples.judgements import read_table_file  # lazy: start-up time
    from abcde.quality.oracle import oracle_judge  # lazy: start-up time

    from abcde.samples.store import JudgementStore  # lazy: start-up time

    path = oracle_judge(sample_dir, oracle_column, out=out)
    if out:
        answers = read_table_file(path, "judgements").column("judgement").to_pylist()
    else:
        answers = [j.judgement for j in JudgementStore(sample_dir).live(rater=f"oracle:{oracle_column}")]
    counts = {k: answers.count(k) for k in ("same", "different", "unsure")}
    if as_json:
        emit_json({"written": str(path), "source": "oracle", "rater": f"oracle:{oracle_column}",
                   "judgements": len(answers), "answers": counts})
        return
    console().print(f"wrote {path} (judgements by oracle column '{oracle_column}': {len(answers)} pairs; "
                    f"same {counts['same']}, different {counts['different']}, unsure {counts['unsure']})")


def _oracle_entities(sample_dir, oracle_column: str, out, as_json: bool) -> None:
    import pyarrow.parquet as pq  # lazy: start-up time

    from abcde.completion import oracle_entities  # lazy: start-up time

    if out:
        raise InputError("--out is for pair samples: an entity sample's answers go to its own file, "
                         "SAMPLE_DIR/entity_judgements.parquet.")
    path = oracle_entities(sample_dir, oracle_column)
    answers = pq.read_table(path).column("answer").to_pylist()
    counts = {k: answers.count(k) for k in ("same", "different", "unsure", "searched", "not searched")}
    if as_json:
        emit_json({"written": str(path), "source": "oracle", "rater": f"oracle:{oracle_column}",
                   "answers": counts})
        return
    console().print(f"wrote {path} (entities completed by oracle column '{oracle_column}': same {counts['same']}, "
                    f"different {counts['different']}, unsure {counts['unsure']}; searched {counts['searched']}, "
                    f"not searched {counts['not searched']})")


def _model_entities(sample_dir, judge_fn, name, hide, as_json: bool) -> None:
    """``judge model`` on an entity sample: the pair judge asked about each member and candidate."""
    from abcde.completion.model import model_entities  # lazy: start-up time

    res = model_entities(sample_dir, judge_fn, name=name, hide=hide)
    if as_json:
        emit_json(res.to_dict())
        return
    a = res.answers
    console().print(f"wrote {res.path} (entities completed by {res.rater}: same {a['same']}, different "
                    f"{a['different']}, unsure {a['unsure']}; searched {a['searched']}, not searched "
                    f"{a['not searched']}" + (f"; {res.unanswered} questions got no usable answer" if res.unanswered
                                              else "") + ")")
    if res.unanswered:
        raise SystemExit(1)


def _export_entities(sample_dir, out, source, force: bool, entities: bool, as_json: bool) -> None:
    from abcde.completion import is_entity_sample  # lazy: start-up time
    from abcde.completion.export import export_entities  # lazy: start-up time

    if not is_entity_sample(sample_dir):
        raise InputError(f"--entities is for an entity sample ('abcde entities'); '{sample_dir}' is not one.")
    if not entities:
        raise InputError("On an entity sample, 'judge export' writes its completed entities as a truth file: pass "
                         "--entities.")
    d = export_entities(sample_dir, out, source=source, force=force)
    if as_json:
        emit_json(d)
        return
    console().print(f"wrote {d['written']}: {d['entities']:,} complete entities ({d['items']:,} items), each with its "
                    f"inclusion probability; left out: {d['incomplete']:,} incomplete, {d['unjudged']:,} not judged. "
                    f"A sample of {d['population']}: 'abcde pointwise --truth {d['written']} --truth-sample inclusion' "
                    "estimates that population's numbers.", soft_wrap=True)


@judge.command("serve")
@click.argument("sample_dir", type=click.Path(file_okay=False))
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Interface to bind; the default serves only this machine (any other needs invite links: --raters).")
@click.option("--port", default=8766, show_default=True, type=click.IntRange(0, 65535), help="0 picks a free port.")
@click.option("--replicate", "--rater-share", "replicate", type=click.FloatRange(0, 1), default=None,
              help="Share of pairs to show to two raters, for agreement (Cohen's/Fleiss' kappa). "
                   "Stored on first use; default 0.")
@click.option("--seed", type=int, default=None, help="Seed of every rater's random pair order (stored; default 0).")
@click.option("--target-width", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Width of ΔPrecision's 95% interval after which the owner's view says you can stop.")
@click.option("--hide", multiple=True, help="Item attribute not to show, e.g. a ground-truth column (repeatable).")
@click.option("--show-ids", is_flag=True, help="Show the item ids (they can give the answer away).")
@click.option("--show-raters", is_flag=True,
              help="Show every rater's name in the progress and agreement (default: others are 'rater 1', ...; "
                   "the owner's view names the raters invited with --raters).")
@click.option("--adaptive", is_flag=True,
              help="Stratified samples: after each stratum's first judgements, serve the next pair from the "
                   "stratum whose judgement most reduces ΔPrecision's SE (adaptive Neyman allocation); pair it "
                   "with --target-width.")
@click.option("--raters", "raters_spec", default=None, metavar="NAMES|FILE",
              help="Invite these raters (alice,bob,carol, or a file with one name a line): prints one secret link per "
                   "rater and one for the owner; without a valid link the server reads and writes nothing. Links "
                   "are kept (hashed) in the store: a restarted server honours them. Needed on any --host but "
                   "loopback, unless the sample already has invites.")
@click.option("--public-url", default=None, metavar="URL",
              help="The address raters open when a reverse proxy (TLS) is in front, e.g. https://judge.example.org/: "
                   "invite links start with it and its name passes the Host check.")
@click.option("--instructions", type=click.Path(dir_okay=False), default=None, metavar="FILE.md",
              help="Instructions for raters (Markdown: headings, lists, emphasis, code, http(s) links; no HTML), "
                   "shown on the judging page. Kept in the store: a restarted server shows them without the file; "
                   "an empty file removes them.")
@click.option("--verbose", is_flag=True, help="Log every request to stderr (invite tokens hidden).")
@json_option(help="Print the URL, the invite links etc. as one JSON line, then serve.")
@handle_errors
def judge_serve(sample_dir, host, port, replicate, seed, target_width, hide, show_ids, show_raters, adaptive,
                raters_spec, public_url, instructions, verbose, as_json):
    """A web app where people judge the sample's pairs (blind, one at a time); on an entity sample
    ('abcde entities'), where they complete each drawn item's entity.

    Raters open the first URL printed and see their progress and one pair at a time, never the
    estimates; the owner's view (URL/owner) shows the live estimates, agreement and the verdict.
    Every judgement is committed to SAMPLE_DIR/judgements.sqlite before the next pair is shown;
    a restarted server resumes each rater where they stopped. Keys: s same, d different,
    u can't tell, z or Backspace undo.

    Alone at this machine (127.0.0.1, the default), a rater types their name. A team at other
    machines: --raters alice,bob prints an invite link per rater (their name comes from it) and
    the owner's; see 'abcde judge raters' to list, revoke or replace them.
    """
    from abcde.completion import is_entity_sample  # lazy: start-up time
    from abcde.samples.invites import InviteBook  # lazy: start-up time
    from abcde.web.judging_server import serve  # lazy: start-up time

    raters = read_raters(raters_spec) if raters_spec is not None else []
    if is_entity_sample(sample_dir):
        pairs_only = {"--replicate": replicate is not None, "--seed": seed is not None,
                      "--target-width": target_width is not None, "--adaptive": adaptive, "--show-raters": show_raters}
        given = [k for k, v in pairs_only.items() if v]
        if given:
            raise InputError(f"{given[0]} is for pair samples; '{sample_dir}' is an entity sample (abcde entities), "
                             "served in draw order.")
        return _serve_entities(sample_dir, host=host, port=port, hide=hide, show_ids=show_ids, verbose=verbose,
                               raters=raters, public_url=public_url, instructions=instructions, as_json=as_json)
    srv = serve(sample_dir, host=host, port=port, seed=seed, replicate=replicate, target_width=target_width,
                hide=hide, show_ids=show_ids, verbose=verbose, adaptive=adaptive, show_raters=show_raters,
                raters=raters, public_url=public_url, instructions=instructions)
    with srv.server.stop_on_sigterm():  # from here on SIGTERM stops the server as Ctrl+C does
        s = srv.session
        rows = []
        if srv.invites_on:
            counts = Counter(j.rater for j in s.store.live(source="person"))
            rows = invite_rows(InviteBook(s.store).invites(), counts, srv.links)
        info = {"url": srv.url, "owner_url": srv.owner_url, "pid": os.getpid(), "sample_dir": str(s.sample_dir),
                "store": str(s.store.path), "pairs": len(s.pair_ids), "replicated_pairs": len(s.replicated),
                "seed": s.seed, "replicate": s.replicate,
                "allocation": "adaptive Neyman" if s.adaptive else "as sampled",
                "invites": srv.invites_on, "links": srv.links, "raters": rows,
                "instructions": s.store.instructions() is not None}
        if as_json:
            click.echo(json.dumps(info))
        else:
            who = "to invited raters only" if srv.invites_on else "to this machine only; a rater types their name"
            click.echo(f"abcde judge: serving {len(s.pair_ids)} pairs of {safe_text(sample_dir)} {who} "
                       f"(Ctrl+C to stop); judgements go to {safe_text(s.store.path)}\n"
                       f"  raters judge at  {srv.link_base if srv.invites_on else srv.url}\n"
                       f"  the owner's view {(srv.link_base if srv.invites_on else srv.url) + 'owner'} (estimates, "
                       "agreement, verdict; raters do not see them)")
            if srv.invites_on:
                print_invites(rows, sample_dir, invites_on=False)
        sys.stdout.flush()
        try:
            srv.serve_forever()
        except KeyboardInterrupt:
            pass
        if not as_json:
            click.echo(f"stopped; {len(s.store.live(source='person'))} person judgements in {safe_text(s.store.path)}")


def _serve_entities(sample_dir, *, host, port, hide, show_ids, verbose, raters, public_url, instructions,
                    as_json: bool) -> None:
    """``abcde judge serve DIR`` on an entity sample: "complete this item's entity"
    (:mod:`abcde.web.routes_entities`); answers go to DIR/entity_judgements.sqlite."""
    from abcde.web.routes_entities import serve_entities  # lazy: start-up time

    srv = serve_entities(sample_dir, host=host, port=port, hide=hide, show_ids=show_ids, verbose=verbose,
                         raters=raters, public_url=public_url, instructions=instructions)
    with srv.server.stop_on_sigterm():
        s = srv.session
        base = srv.link_base if srv.invites_on else srv.url
        info = {"url": srv.url, "owner_url": srv.owner_url, "pid": os.getpid(), "sample_dir": str(s.sample_dir),
                "kind": "entities",
                "store": str(s.store.path), "anchors": len(s.order), "invites": srv.invites_on, "links": srv.links,
                "instructions": s.store.setting("instructions") is not None}
        if as_json:
            click.echo(json.dumps(info))
        else:
            who = "to invited raters only" if srv.invites_on else "to this machine only; a rater types their name"
            click.echo(f"abcde judge: serving {len(s.order)} items of the entity sample {safe_text(sample_dir)} {who} "
                       f"(Ctrl+C to stop); answers go to {safe_text(s.store.path)}\n"
                       f"  raters complete entities at {base}\n"
                       f"  the owner's view {base}owner (estimates, answers to settle; raters do not see them)\n"
                       f"  then 'abcde quality {safe_text(sample_dir)}' estimates ΔRecall and IQ from the answers")
            for name, link in srv.links.items():
                click.echo(f"  {safe_text(name)}: {link}")
        sys.stdout.flush()
        try:
            srv.serve_forever()
        except KeyboardInterrupt:
            pass
        if not as_json:
            live = s.store.live(source="person")
            click.echo(f"stopped; {len(live)} answers of {len({r['anchor'] for r in live})} items in "
                       f"{safe_text(s.store.path)}")


@judge.command("raters")
@click.argument("sample_dir", type=click.Path(file_okay=False))
@click.option("--revoke", multiple=True, metavar="NAME",
              help="Revoke NAME's invite link (repeatable; 'owner' is the owner's): it stops working at once, also "
                   "on a running server; NAME's judgements stay.")
@click.option("--new-link", "new_link", multiple=True, metavar="NAME",
              help="Make an invite link for NAME (repeatable): a new rater, or a replacement for a lost link (the "
                   "old one stops working). Printed this once.")
@click.option("--public-url", default=None, metavar="URL",
              help="The address new links start with (default: the one the last server on this sample used).")
@json_option
@handle_errors
def judge_raters(sample_dir, revoke, new_link, public_url, as_json):
    """List a served sample's raters and invite links (never their secrets); revoke or replace links.

    The table shows each name's link (active or revoked, when made), its judgements, and raters
    who judged without a link. Changes take effect at once, also on a running server; judgements
    are never touched.
    """
    from abcde.samples.invites import InviteBook  # lazy: start-up time
    from abcde.samples.raters import check_invite_name  # lazy: start-up time
    from abcde.samples.sample_dir import PairSampleDir  # lazy: start-up time
    from abcde.samples.sqlite_guard import STORE_NAME  # lazy: start-up time
    from abcde.samples.store import JudgementStore  # lazy: start-up time
    from abcde.web.judging_server import check_public_url  # lazy: start-up time

    both = sorted(set(revoke) & set(new_link))
    if both:
        raise InputError(f"{both[0]!r} is given to both --revoke and --new-link; --new-link alone replaces a link "
                         "(the old one stops working).")
    for name in new_link:  # before anything is opened (a store made)
        check_invite_name(name)
    public_url = check_public_url(public_url)
    from abcde.completion.sample import is_entity_sample  # lazy: start-up time

    entity = is_entity_sample(sample_dir)
    if entity:  # an entity sample's invites live in its answer store
        from abcde.completion.sample import EntitySample  # lazy: start-up time
        from abcde.completion.store import STORE_FILE, EntityStore  # lazy: start-up time

        sample, store_name, open_store = EntitySample.read(sample_dir), STORE_FILE, EntityStore
    else:
        sample, store_name, open_store = PairSampleDir.read(sample_dir), STORE_NAME, JudgementStore
    if not (sample.path / store_name).exists() and not new_link:
        if revoke:
            raise InputError(f"No active invite link for {revoke[0]!r} in '{sample.path / store_name}' (there is no "
                             "store yet). Names with an active link: none.")
        store = None
    else:
        store = open_store(sample_dir, create=True) if entity else open_store(sample_dir)
    book = InviteBook(store) if store is not None else None
    revoked, links = [], {}
    if book is not None:
        if revoke:
            revoked = book.revoke(revoke)
        if new_link:
            base = public_url or book.link_base()
            for inv in book.invite(new_link, replace=True):
                links[inv.name] = f"{base or '/'}join/{inv.token}"
    invites = book.invites() if book is not None else []
    if store is None:
        counts = {}
    elif entity:  # anchors answered, per rater
        counts = Counter(r for r, _ in {(x["rater"], x["anchor"]) for x in store.live(source="person")})
    else:
        counts = Counter(j.rater for j in store.live(source="person"))
    rows = invite_rows(invites, counts, links)
    invites_on = bool(invites)
    if as_json:
        emit_json({"sample_dir": str(sample.path), "store": str(sample.path / store_name), "invites": invites_on,
                   "link_base": book.link_base() if book is not None else None, "raters": rows,
                   "revoked": [i.name for i in revoked], "new_links": links})
        return
    for inv in revoked:
        click.echo(f"revoked the invite link of {inv.name!r} (made {_when(inv.created_at)}); its judgements stay.")
    print_invites(rows, sample_dir, invites_on=invites_on)
    if links and book.link_base() is None and public_url is None:
        click.echo("No server has served this sample with invites yet: put the server's address before /join/ "
                   "(or pass --public-url).")


@judge.command("model")
@click.argument("sample_dir", type=click.Path(file_okay=False))
@click.option("--callable", "spec", default=None, metavar="MODULE:FUNCTION",
              help="A Python judge (item_a: dict, item_b: dict) -> 'same'|'different'|'unsure' "
                   "(MODULE may be path/to/file.py).")
@click.option("--model", default=None, help="LLM model name (env ABCDE_LLM_MODEL / OPENAI_MODEL).")
@click.option("--llm-base-url", default=None,
              help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1 (env ABCDE_LLM_BASE_URL / "
                   "OPENAI_BASE_URL; default https://api.openai.com/v1).")
@click.option("--api-key", default=None, help="API key (better: env ABCDE_LLM_API_KEY or OPENAI_API_KEY). Needed "
              "unless the base URL is this machine (localhost, 127.0.0.1, ::1).")
@click.option("--allow-insecure-http", is_flag=True,
              help="Send the API key to a plain http:// base URL of another machine (refused otherwise).")
@click.option("--prompt-template", type=click.Path(dir_okay=False, exists=True), default=None,
              help="File with the user prompt; {item_a} and {item_b} are replaced by the items' attributes.")
@click.option("--concurrency", default=4, show_default=True, type=click.IntRange(min=1),
              help="Judge calls in flight at once.")
@click.option("--max-retries", default=5, show_default=True, type=click.IntRange(min=0),
              help="Retries on HTTP 429/5xx, timeouts, connection errors and answers that are not a judgement.")
@click.option("--retry-backoff", default=1.0, show_default=True, type=click.FloatRange(min=0),
              help="First backoff in seconds, doubled on each retry (or the server's Retry-After).")
@click.option("--timeout", default=60.0, show_default=True, type=click.FloatRange(min=0, min_open=True),
              help="Seconds per request.")
@click.option("--temperature", default=0.0, show_default=True, type=float, help="Sampling temperature sent.")
@click.option("--cache", type=click.Path(dir_okay=False), default=None,
              help="LLM answer cache (SQLite; default SAMPLE_DIR/llm-cache.sqlite); share it to never pay twice.")
@click.option("--name", default=None, help="Rater name suffix (judgements carry rater 'model:NAME').")
@click.option("--hide", multiple=True, help="Item attribute the judge must not see (repeatable).")
@click.option("--show-ids", is_flag=True, help="Give the judge the item ids too.")
@click.option("--limit", type=click.IntRange(min=0), default=None, help="Judge at most this many pairs now.")
@json_option
@handle_errors
def judge_model(sample_dir, spec, model, llm_base_url, api_key, allow_insecure_http, prompt_template, concurrency,
                max_retries, retry_backoff, timeout, temperature, cache, name, hide, show_ids, limit, as_json):
    """Judge the sample's pairs with a Python callable or an LLM (OpenAI-compatible API).

    Answers are recorded in SAMPLE_DIR/judgements.sqlite (source 'model') as they arrive; a run
    resumes where an earlier one stopped. Only same, different or unsure is a judgement: any other
    answer (an error page, a refusal, an essay) is asked again, then the pair is left unjudged
    (never cached), counted, and the command exits 1; run it again to ask those pairs again.
    """
    from abcde.completion import is_entity_sample  # lazy: start-up time
    from abcde.judging import LLMJudge, judge_with_model  # lazy: start-up time
    from abcde.judging.models import load_callable  # lazy: start-up time
    from abcde.samples.sample_dir import PairSampleDir  # lazy: start-up time

    entity = is_entity_sample(sample_dir)
    if not entity:
        PairSampleDir.read(sample_dir)  # the sample first: a bad directory is named before the judge's options
    elif spec and (show_ids or limit is not None):
        raise InputError("--show-ids and --limit are for pair samples: on an entity sample the model is asked about "
                         "every member and candidate of every item, by their attributes.")
    llm_opts = {"--model": model, "--llm-base-url": llm_base_url, "--api-key": api_key,
                "--allow-insecure-http": allow_insecure_http, "--prompt-template": prompt_template, "--cache": cache}
    if spec:
        given = [k for k, v in llm_opts.items() if v]
        if given:
            raise click.UsageError(f"--callable judges in Python; {', '.join(given)} are LLM options.")
        judge_fn = load_callable(spec)
    else:
        template = None
        if prompt_template:
            try:
                template = Path(prompt_template).read_text(encoding="utf-8")
            except UnicodeDecodeError as exc:
                raise AbcdeError(f"The prompt template '{prompt_template}' is not UTF-8 text ({exc.reason} at "
                                 f"byte {exc.start}).") from exc
        judge_fn = LLMJudge(base_url=llm_base_url, model=model, api_key=api_key, prompt_template=template,
                            cache=cache or Path(sample_dir) / "llm-cache.sqlite", max_retries=max_retries,
                            backoff=retry_backoff, timeout=timeout, temperature=temperature,
                            template_label=f"The prompt template '{prompt_template}'" if prompt_template
                            else "The prompt template", allow_insecure_http=allow_insecure_http)
    if entity:
        return _model_entities(sample_dir, judge_fn, name, hide, as_json)
    res = judge_with_model(sample_dir, judge_fn, name=name, concurrency=concurrency, hide=hide, show_ids=show_ids,
                           limit=limit)
    d = res.to_dict()
    unjudged = None
    if res.unjudged:
        first = res.unusable[0]
        unjudged = (f"{res.unjudged} pair{'s' * (res.unjudged != 1)} got no usable answer (first: pair "
                    f"{first['pair_id']!r}, {first['reason']}: {first['answer']!r}); left unjudged and not cached: "
                    "run the command again to ask them again.")
    if as_json:
        emit_json(d)
        if unjudged:
            raise click.exceptions.Exit(1)
        return
    a = d["answers"]
    console().print(f"{res.rater}: judged {res.judged_now} pairs now (same {a['same']}, different {a['different']}, "
                    f"unsure {a['unsure']}); {res.unjudged} left unjudged; {res.already} were judged before; "
                    f"{res.pairs} in the sample.")
    if res.stats:
        console().print("judge: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in res.stats.items()))
    for w in res.warnings:
        console().print(f"Warning: {w}", style="yellow", soft_wrap=True)
    people = d.get("people_tasks")
    if people and people["chosen"]:
        split = sum(1 for c in people["cells"] if "|" in c)
        console().print(f"people's tasks: {people['tasks']:,} pairs, chosen by the model's answers"
                        + (f" ({split} cells: each stratum's pairs the model called same, different or left)"
                           if split else "") + f"; judge them with: abcde judge serve {sample_dir}")
        if people.get("note"):  # not the number asked (--human-budget): why
            console().print(people["note"][:1].upper() + people["note"][1:] + ".", soft_wrap=True)
        console().print(f"estimate with: abcde quality {sample_dir} (model + people, once people have judged)")
    else:
        if people:
            console().print(f"people's tasks: {people['tasks']:,} pairs, as drawn: {people['reason']}")
        console().print(f"stored in {res.store}; estimate with: abcde quality {sample_dir} --source model")
    if unjudged:
        raise click.ClickException(unjudged)


@judge.command("export")
@click.argument("sample_dir", type=click.Path(file_okay=False))
@click.option("--out", required=True, type=click.Path(dir_okay=False),
              help="Judgement file to write (.csv, .parquet or .jsonl), readable by 'abcde quality --judgements'; "
                   "outside SAMPLE_DIR, where 'abcde quality SAMPLE_DIR' would read it.")
@click.option("--source", type=click.Choice(["person", "model", "oracle"]), default=None,
              help="Export only this source's judgements.")
@click.option("--force", is_flag=True, help="Replace an existing file at --out (never done otherwise).")
@click.option("--entities", is_flag=True,
              help="On an entity sample ('abcde entities'): write the completed entities as a truth file (item_id, "
                   "cluster_id, inclusion) that 'abcde pointwise --truth FILE --truth-sample inclusion' reads.")
@json_option
@handle_errors
def judge_export(sample_dir, out, source, force, entities, as_json):
    """Write the store's judgements (SAMPLE_DIR/judgements.sqlite) as a judgement file, with agreement;
    with --entities, an entity sample's completed entities as a truth sample."""
    from abcde.completion import is_entity_sample  # lazy: start-up time
    from abcde.judging import JudgementStore, agreement  # lazy: start-up time
    from abcde.samples.raters import OWNER  # lazy: start-up time

    if entities or is_entity_sample(sample_dir):
        return _export_entities(sample_dir, out, source, force, entities, as_json)

    if not (Path(sample_dir) / "judgements.sqlite").exists():
        raise AbcdeError(f"There is no judgement store (judgements.sqlite) in '{sample_dir}'; "
                         "'abcde judge serve' and 'abcde judge model' make one.")
    store = JudgementStore(sample_dir)
    path = store.export(out, source=source, force=force)
    live = store.live(source=source)
    d = {"written": str(path), "judgements": len(live), "pairs_judged": len({j.pair_id for j in live}),
         "pairs": len(store.pair_ids), "by_source": dict(Counter(j.source for j in live)),
         "by_rater": dict(Counter(j.rater for j in live)),
         # the owner's settling votes are cast only where raters disagree: not part of the agreement
         "person_agreement": agreement([j for j in live if j.source == "person" and j.rater != OWNER])}
    if as_json:
        emit_json(d)
        return
    console().print(f"wrote {path}: {d['judgements']} judgements of {d['pairs_judged']} / {d['pairs']} pairs "
                    f"(by source: {', '.join(f'{k} {v}' for k, v in d['by_source'].items()) or 'none'})")
    ag = d["person_agreement"]
    if ag["replicated_pairs"]:
        k = ag["fleiss_kappa"]
        console().print(f"pairs judged by two people: {ag['replicated_pairs']}; Fleiss' kappa "
                        f"{'n/a' if k is None else f'{k:.3f}'}")
