"""The exploration UI: slice, group and drill into an exploration sample in a browser.

``abcde explore serve SAMPLE.parquet`` starts a local web server (127.0.0.1 by
default) over an :class:`~abcde.ExplorationSample`. The page builds a slice from
filters on the sample's columns (structured conditions, never SQL text), groups it by
attributes, ranks the groups by estimated contribution, shows example items drawn
∝ importance weight, and drills from an item into its Base and Exp clusters. Every
number comes from the same library calls as ``abcde explore query``
(:meth:`ExplorationSample.estimate`, :meth:`~ExplorationSample.group`,
:meth:`~ExplorationSample.examples`).

The page keeps its state in its address (filters, group-by, ranking, sort order, the item open), so
a slice is shared as a link and a reload restores it; the group-by choices carry each column's
number of distinct values (id-like columns set apart), and a group of fewer than :data:`LOW_COUNT`
sampled items is flagged rather than given a standard error.

Cluster members come from the full clusterings when the sample records its inputs
(``abcde explore sample`` does) or when they are given; otherwise from the sample.

A heavy query cannot stall light ones: each request's queries on the sample run on a DuckDB
connection of their own (a session of one in-memory database, under one memory limit), so
they run side by side; a query still running after ``query_timeout`` seconds is interrupted and
answered with a 504, and a grouping that gives more than :data:`MAX_GROUPS` groups is refused
(ranking them is Python work that an interrupt could not stop).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import threading
import time
from pathlib import Path

import ibis
import pyarrow as pa
import pyarrow.compute as pc
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.routing import Route

from abcde.core.names import IMPACT_METRICS, METRIC_LABELS
from abcde.engine import Engine, connect
from abcde.errors import AbcdeError, EngineError, InputError
from abcde.metrics.impact import impact
from abcde.util.files import FORMULA_STARTS
from abcde.sampling.explore import CORE_COLUMNS, ExplorationSample
from abcde.web.server import Assets, create_app, json_response, page_response, read_json
from abcde.web.transport import Limits, Server

MAX_MEMBERS = 200
MAX_EXAMPLES = 200
VALUE_HINTS = 50
#: Rows of the even spread that tells an id-like column before counting its values (see ``meta``).
PROBE_ROWS = 200_000
MAX_GROUPS = 100_000  #: groups a query may give (ranked in Python: more would hold a thread and the GIL)
QUERY_TIMEOUT = 30.0  #: seconds a query may run before it is interrupted (``explore serve --query-timeout``)
#: A group (or slice) with fewer sampled items than this gets a low-count flag on the page instead of a
#: ± s.e.: with one item the standard error equals the estimate, and a few items tell no more.
LOW_COUNT = 5
#: A column is id-like (de-emphasised as a group-by choice) when grouping by it would put more than this
#: share of the sampled items into low-count groups: about one value per item (or per few items, as
#: names and dates of birth are within a cluster), so its groups tell nothing one by one.
ID_LIKE_SHARE = 0.5
#: How the page heads the sample's own columns: the metrics by the paper's names (as its tiles say).
COLUMN_LABELS = {**{m: METRIC_LABELS[m] for m in IMPACT_METRICS}, "item_id": "item", "base_cluster": "Base cluster",
                 "exp_cluster": "Exp cluster", "weight": "weight", "draw_count": "draws", "importance_weight": "w(i)"}


class QueryTimeout(AbcdeError):
    """A query ran longer than the app's ``query_timeout`` and was interrupted (HTTP 504)."""


class _Bounded:
    """An engine for one request's queries on the sample: results turned into Python rows are
    at most :data:`MAX_GROUPS` (a grouping by a column of millions of values is refused after its
    query, which the deadline bounds, rather than ranked for minutes)."""

    def __init__(self, engine: Engine):
        self.engine = engine

    def to_arrow(self, expr, *, step: str = "query"):
        return self.engine.to_arrow(expr, step=step)

    def rows(self, expr, *, step: str = "query") -> list[dict]:
        t = self.engine.to_arrow(expr, step=step)
        if t.num_rows > MAX_GROUPS:
            raise InputError(f"The query gives {t.num_rows:,} groups, more than the {MAX_GROUPS:,} that can be "
                             "ranked; group by fewer or coarser columns, or narrow the filter.")
        return t.to_pylist()

    def one(self, expr, *, step: str = "query") -> dict:
        rows = self.rows(expr, step=step)
        return rows[0] if rows else {}

    def __getattr__(self, name):
        return getattr(self.engine, name)


def _clean(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    return str(v)


class ExploreApp:
    """The exploration UI's operations, independent of HTTP (the server calls these).

    Parameters
    ----------
    sample
        The exploration sample (or a path to one).
    base, exp, items, item_id, cluster_id, weight
        The full inputs, for drilling into whole clusters. Default: the inputs the
        sample recorded, when those files still exist.
    engine
        The engine of the population's per-item table; its memory limit, threads and spill
        directory (if it has them) also apply to the sample's queries.
    query_timeout
        Seconds a query may run; a longer one is interrupted (:class:`QueryTimeout`, a 504).
        ``None``: no limit.
    """

    def __init__(self, sample, *, base=None, exp=None, items=None, item_id: str = "item_id",
                 cluster_id: str = "cluster_id", weight: str | None = None, engine=None,
                 query_timeout: float | None = QUERY_TIMEOUT):
        self.sample = sample if isinstance(sample, ExplorationSample) else ExplorationSample.read(sample)
        rec = self.sample.metadata.get("inputs") or {}
        if base is None and exp is None and rec.get("base") and rec.get("exp") and all(
                Path(rec[k]).exists() for k in ("base", "exp")):
            base, exp = rec["base"], rec["exp"]
            items = items or (rec.get("items") if rec.get("items") and Path(rec["items"]).exists() else None)
            # The column settings the sample was drawn with (older samples: the defaults).
            item_id = rec.get("item_id") or item_id
            cluster_id = rec.get("cluster_id") or cluster_id
            weight = rec.get("weight") or weight
        self._inputs = dict(base=base, exp=exp, items=items, item_id=item_id, cluster_id=cluster_id, weight=weight)
        self._engine = engine  # runs the population's per-item table (memory limit, threads)
        if query_timeout is not None and not query_timeout > 0:
            raise InputError(f"query_timeout must be a positive number of seconds. Got {query_timeout!r} instead.")
        self.query_timeout = query_timeout
        # The sample's queries: sessions (connections) of one in-memory DuckDB database, one per
        # request in flight, reused; the memory limit and threads are the database's, shared.
        given = getattr(engine, "settings", None) or {}
        limits = {k: v for k, v in given.items() if k in ("memory_limit", "threads", "temp_directory") and v}
        self._queries = connect(**limits)
        self._idle: list[Engine] = []
        self._idle_lock = threading.Lock()
        self.sample.expr  # noqa: B018 - made once, here, rather than by two requests at once
        self._meta = None
        self._meta_lock = threading.Lock()
        self._full = None
        self._full_lock = threading.Lock()  # the population's table is a temporary table of one connection
        self._warm: threading.Thread | None = None
        self._busy: set[Engine] = set()  # sessions running a request's queries now
        self._closing = False

    @property
    def whole_clusters_from(self) -> str:
        """Where drill-downs find cluster members: ``"population"`` (the full inputs are known)
        or ``"sample"`` (only the sampled items)."""
        return "population" if self._inputs["base"] else "sample"

    def warm_up(self) -> threading.Thread:
        """Compute the population's per-item table in the background (drill-downs wait for it)."""
        def run():
            try:
                self._full_items()
            except AbcdeError:
                pass  # the first drill-down tries again and shows the error on the page
            except Exception:
                if not self._closing:  # interrupted by close(): nothing to say
                    raise

        th = threading.Thread(target=run, name="abcde-explore-warm-up", daemon=True)
        self._warm = th
        th.start()
        return th

    def close(self, timeout: float = 10.0) -> None:
        """Stop the work still running in the background before the process ends (the server has
        stopped: :func:`make_server`'s server calls this): the warm-up and the queries of requests
        given up, each interrupted until its thread is done, for up to ``timeout`` seconds. A thread
        still inside DuckDB when Python exits aborts the process (SIGABRT, "FATAL: exception not
        rethrown"), so stopping within seconds of the start, while the warm-up ran, did that."""
        self._closing = True
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                warm = self._warm if self._warm is not None and self._warm.is_alive() else None
                with self._idle_lock:
                    busy = list(self._busy)
                if warm is None and not busy:
                    return
                for engine in ([self._engine] if warm is not None and self._engine is not None else []) + busy:
                    with contextlib.suppress(Exception):
                        engine.interrupt()
                if warm is not None:
                    warm.join(0.05)
                else:
                    time.sleep(0.05)
        finally:
            self._closing = False

    # -- running queries -------------------------------------------------------
    @contextlib.contextmanager
    def _deadline(self, engine):
        """Interrupt what ``engine`` runs once it has run ``query_timeout`` seconds; the query's
        EngineError becomes a :class:`QueryTimeout`. Yields a dict whose ``"fired"`` tells."""
        state = {"done": False, "fired": False}
        if self.query_timeout is None:
            yield state
            return
        lock = threading.Lock()

        def fire():
            with lock:  # never after the block has ended: the interrupt would hit the engine's next query
                if not state["done"]:
                    state["fired"] = engine.interrupt()

        timer = threading.Timer(self.query_timeout, fire)
        timer.daemon = True
        timer.start()
        try:
            yield state
        except EngineError as exc:
            if state["fired"]:
                raise QueryTimeout(f"The query took longer than {self.query_timeout:g} s and was cancelled; narrow "
                                   "the filter or group by fewer columns.") from exc
            raise
        finally:
            with lock:
                state["done"] = True
            timer.cancel()

    @contextlib.contextmanager
    def _on_sample(self):
        """The sample, answered on a session of its own (concurrent with other requests') under
        the deadline."""
        with self._idle_lock:
            engine = self._idle.pop() if self._idle else None
        if engine is None:
            engine = self._queries.session()
        # ExplorationSample makes its engine and expression once (cached properties): a view of
        # the same table whose engine is this request's.
        view = dataclasses.replace(self.sample)
        view.__dict__.update(engine=_Bounded(engine), expr=self.sample.expr)
        state = {"fired": False}
        with self._idle_lock:
            self._busy.add(engine)
        try:
            with self._deadline(engine) as state:
                yield view
        finally:
            with self._idle_lock:
                self._busy.discard(engine)
                # an interrupted session (by the deadline, or by close()) is dropped, in case its
                # interrupt is pending
                if not state["fired"] and not self._closing:
                    self._idle.append(engine)

    # -- metadata ----------------------------------------------------------
    def meta(self) -> dict:
        """The sample's columns, value hints and overall estimate (computed once: the sample does
        not change)."""
        with self._meta_lock:
            if self._meta is None:
                self._meta = self._compute_meta()
            return self._meta

    def _compute_meta(self) -> dict:
        s = self.sample
        t = s.table
        rows = t.num_rows
        cols = []
        for name in t.column_names:
            typ = t.schema.field(name).type
            kind = "number" if (pa.types.is_integer(typ) or pa.types.is_floating(typ)
                                or pa.types.is_decimal(typ)) else "text"
            # The groups a group-by on this column gives (null is a group of its own), and the share of
            # the sampled items that would be in a group with a low count, counted by Arrow in one pass,
            # never as Python objects (a 10M-item sample's ids would take a minute and stall the page).
            vc, probe = None, None
            try:
                # A column that is nearly one value per item in an even spread of rows (at most
                # PROBE_ROWS) is id-like without a full count: counting millions of distinct values
                # takes seconds, which /api/meta must not.
                col = t.column(name)
                step = max(1, rows // PROBE_ROWS)
                probe = len(pc.value_counts(col.take(pa.array(range(0, rows, step))))) if step > 1 else None
                if probe is None or probe <= ID_LIKE_SHARE * math.ceil(rows / step):
                    vc = pc.value_counts(col)
            except (pa.ArrowNotImplementedError, pa.ArrowInvalid):  # a type Arrow cannot count (lists, maps)
                vc, probe = None, None
            counts = vc.field("counts") if vc is not None else None
            small = (pc.sum(pc.if_else(pc.less(counts, LOW_COUNT), counts, 0)).as_py() or 0) if vc is not None else 0
            id_like = (rows > 0 and small > ID_LIKE_SHARE * rows) if vc is not None else probe is not None
            entry = {"name": name, "label": COLUMN_LABELS.get(name, name), "type": str(typ), "kind": kind,
                     "attribute": name not in CORE_COLUMNS, "distinct": len(vc) if vc is not None else None,
                     "low_count_share": (small / rows if rows else 0.0) if vc is not None or probe is None else 1.0,
                     "id_like": id_like}
            if vc is None and probe is not None:
                entry["distinct_at_least"] = probe
            if kind == "text" and vc is not None and len(vc):
                top = pc.select_k_unstable(pa.table({"values": vc.field("values"), "counts": counts}),
                                           k=min(VALUE_HINTS, len(vc)), sort_keys=[("counts", "descending")])
                top = sorted(zip(vc.field("values").take(top).to_pylist(), counts.take(top).to_pylist()),
                             key=lambda r: -r[1])
                entry["values"] = [_clean(v) for v, _ in top]
            cols.append(entry)
        with self._on_sample() as view:
            overall = view.estimate().to_dict()
        # Input files by name only: the page has no use for this machine's paths.
        names = {k: Path(str(v)).name for k, v in self._inputs.items() if k in ("base", "exp", "items") and v}
        return _clean({"sample": {k: v for k, v in s.metadata.items() if k != "inputs"},
                       "inputs": names or None, "whole_clusters_from": self.whole_clusters_from,
                       "columns": cols, "attributes": s.attributes, "overall": overall, "rows": rows,
                       "low_count": LOW_COUNT, "id_like_share": ID_LIKE_SHARE,
                       "csv_formula_starts": list(FORMULA_STARTS)})

    # -- queries -----------------------------------------------------------
    @staticmethod
    def _structured(filters):
        """Filters from the browser: a list of ``{column, op, value}`` conditions, never text (no
        text from a client is parsed as a query)."""
        if filters is not None and not isinstance(filters, list):
            raise InputError(f"filters must be a list of {{column, op, value}} conditions. Got "
                             f"{type(filters).__name__} instead.")
        return filters or None

    def query(self, filters=None, group_by=(), metric: str = "jaccard", top: int = 20) -> dict:
        """The slice's estimate and its top groups (``filters``: structured conditions)."""
        filters = self._structured(filters)
        if not isinstance(group_by, (list, tuple)) or not all(isinstance(c, str) for c in group_by):
            raise InputError(f"group_by must be a list of column names. Got {group_by!r} instead.")
        group_by = list(group_by)
        top = max(1, min(int(top), 500))
        t0 = time.perf_counter()
        with self._on_sample() as s:
            sl = s.estimate(filters)
            groups = s.group(group_by, where=filters, metric=metric, top=top) if group_by else []
        return _clean({"filters": filters or [], "group_by": group_by, "metric": metric,
                       "slice": sl.to_dict(), "groups": [g.to_dict() for g in groups],
                       "seconds": time.perf_counter() - t0})

    def examples(self, filters=None, n: int = 20, seed: int = 0) -> dict:
        n = max(1, min(int(n), MAX_EXAMPLES))
        filters = self._structured(filters)
        with self._on_sample() as s:
            rows = s.examples(n, where=filters, seed=int(seed)).to_pylist()
        return _clean({"examples": rows})

    # -- drill-down ----------------------------------------------------------
    def _full_items(self):
        """Per-item metrics and attributes of the whole population (computed once)."""
        with self._full_lock:
            return self._compute_full()

    def _compute_full(self):
        if self._full is None and self._inputs["base"]:
            i = self._inputs
            res = impact(i["base"], i["exp"], items=i["items"], item_id=i["item_id"], cluster_id=i["cluster_id"],
                         weight=i["weight"], top=0, engine=self._engine)
            diff = res.diff
            pi = res.per_item_expr()
            if diff.items is not None and diff.attributes:
                it = diff.items.select("item_id", *diff.attributes)
                pi = pi.left_join(it, pi.item_id == it.item_id).drop("item_id_right")
            self._full = (diff.engine, diff.engine.materialize(pi, "explore_items"))
        return self._full

    @contextlib.contextmanager
    def _source(self):
        """(engine, table, where) of whole clusters: the population's table (one connection: its
        queries run one at a time), else the sample; under the deadline."""
        full = self._full_items()
        if full is not None:
            with self._full_lock, self._deadline(full[0]):
                yield full[0], full[1], "population"
        else:
            with self._on_sample() as s:
                yield s.engine, s.expr, "sample"

    @staticmethod
    def _typed_id(t: ibis.Table, col: str, value):
        typ = t[col].type()
        if not (typ.is_integer() or typ.is_string()):
            raise InputError(f"Lookups by {col} need integer or text ids; this sample's are {typ}.")
        if typ.is_integer():
            try:
                return int(str(value).strip())
            except ValueError:
                raise InputError(f"{col} values are integers here; {value!r} is not one.") from None
        return str(value)

    def item(self, item_id) -> dict:
        """An item's metrics (from the population, or the sample) and whether it was sampled."""
        with self._source() as (eng, t, where):
            v = self._typed_id(t, "item_id", item_id)
            rows = eng.rows(t.filter(t.item_id == v).limit(1), step="item lookup")
        with self._on_sample() as s:
            st = s.expr
            sv = self._typed_id(st, "item_id", item_id)
            sampled = s.engine.rows(st.filter(st.item_id == sv).limit(1), step="item lookup")
        return _clean({"item_id": item_id, "found": bool(rows or sampled), "source": where,
                       "item": (rows or sampled or [None])[0], "sampled": sampled[0] if sampled else None})

    def cluster(self, side: str, cluster_id) -> dict:
        """Members of one Base or Exp cluster (up to 200, heaviest first), with the count."""
        if side not in ("base", "exp"):
            raise InputError(f"side must be 'base' or 'exp'. Got {side!r} instead.")
        col = f"{side}_cluster"
        with self._source() as (eng, t, where):
            v = self._typed_id(t, col, cluster_id)
            c = t.filter(t[col] == v)
            agg = eng.one(c.aggregate(n=c.count(), w=c.weight.sum()), step="cluster size")
            rows = eng.rows(c.order_by([ibis.desc("weight"), "item_id"]).limit(MAX_MEMBERS), step="cluster members")
        return _clean({"side": side, "cluster_id": cluster_id, "source": where, "size": int(agg.get("n") or 0),
                       "weight": agg.get("w"), "members": rows, "truncated": int(agg.get("n") or 0) > len(rows)})


# --------------------------------------------------------------------------- HTTP
# Errors of a query (a bad filter, column, metric or number) are the client's: 400.
# A query cut off by the deadline: 504 (not 503, the answer to a client beyond the connection cap).
ERRORS = {AbcdeError: 400, TypeError: 400, ValueError: 400, OverflowError: 400, QueryTimeout: 504}


def create_explore_app(app: ExploreApp):
    """The exploration UI (ASGI) over ``app``; serve it with :class:`abcde.web.transport.Server`.

    Routes: ``GET /`` (the page), ``GET /static/NAME``, ``GET /api/meta``, ``GET /api/item?id=``,
    ``GET /api/cluster?side=&id=``, ``POST /api/query``, ``POST /api/examples``; errors are the
    one JSON shape of :mod:`abcde.web.server`."""
    assets = Assets({"explore.js": "web/static/explore.js", "explore.css": "web/static/explore.css"})
    page = assets.render("explore.html", low_count=LOW_COUNT)

    async def index(request: Request):
        return page_response(page)

    async def meta(request: Request):
        return json_response(await run_in_threadpool(app.meta))

    async def item(request: Request):
        return json_response(await run_in_threadpool(app.item, request.query_params.get("id", "")))

    async def cluster(request: Request):
        q = request.query_params
        return json_response(await run_in_threadpool(app.cluster, q.get("side", ""), q.get("id", "")))

    async def query(request: Request):
        b = await read_json(request)
        return json_response(await run_in_threadpool(app.query, b.get("filters"), b.get("group_by") or [],
                                                     b.get("metric", "jaccard"), b.get("top", 20)))

    async def examples(request: Request):
        b = await read_json(request)
        return json_response(await run_in_threadpool(app.examples, b.get("filters"), b.get("n", 20),
                                                     b.get("seed", 0)))

    routes = [Route("/", index, methods=["GET"]), *assets.routes(),
              Route("/api/meta", meta, methods=["GET"]),
              Route("/api/item", item, methods=["GET"]),
              Route("/api/cluster", cluster, methods=["GET"]),
              Route("/api/query", query, methods=["POST"]),
              Route("/api/examples", examples, methods=["POST"])]
    return create_app(routes, errors=ERRORS)


class ExploreServer(Server):
    """The exploration app's server: once serving has ended (SIGTERM, Ctrl+C, :meth:`shutdown`),
    the app's background work is stopped too (:meth:`ExploreApp.close`), so the process ends
    cleanly."""

    def __init__(self, app: ExploreApp, **kwargs):
        super().__init__(create_explore_app(app), **kwargs)
        self.explore = app

    def serve_forever(self) -> None:
        try:
            super().serve_forever()
        finally:
            self.explore.close()


def make_server(app: ExploreApp, host: str = "127.0.0.1", port: int = 0, *, limits: Limits = Limits()) -> Server:
    """A server for ``app``, bound (port 0: a free one) but not yet serving: call ``serve_forever()``
    (or ``start()`` for a background thread); ``shutdown()`` stops it, ``server_close()`` closes it.
    SIGTERM stops ``serve_forever()`` in the main thread as :meth:`~Server.shutdown` does (it
    returns; Ctrl+C raises KeyboardInterrupt), after the requests in flight are answered."""
    return ExploreServer(app, host=host, port=port, limits=limits)
