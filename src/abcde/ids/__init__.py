"""Cluster ids that stay: two id-assignment schemes compared as a clustering diff (issue 54; van
Staden, "Evaluation of Cluster Id Assignment Schemes with ABCDE", 2024).

A team publishes an id for each cluster. When the clustering is rebuilt, a *scheme* gives each new
cluster an id: an old one it inherits, or a fresh one. Two schemes, Base (the one in use) and Exp (a
candidate), are compared by turning id assignment into cluster membership:

* every item published earlier becomes a tagged copy ``⟨h, x⟩``, in the cluster of the id it was
  published with;
* every current item becomes ``⟨c, y⟩``, in the cluster of the id its current cluster got from the
  scheme (Base's in the Base clustering, Exp's in the Exp clustering).

Historical–historical co-membership is the same on both sides, and so is current–current (unless Exp
has its own current clustering), so every pair the two clusterings disagree on pairs a current item
with a historical one, and asks one question: is ``y`` the same concept as ``x``? A merge pair that is
the same concept is an id rightly inherited; a split pair that is the same concept is an id lost.
Impact, the pair sample, judging, the estimators, the recall lift and the verdict then apply unchanged:
"recall" is ids kept for the same concept, "precision" ids not handed to another concept.

:func:`tag_clusterings` builds the two tagged clusterings and their items table; :func:`id_table` the
exact table of ids with their lineage under each scheme.
"""

from __future__ import annotations

from abcde.ids.lineage import CLASSES, IdTable, id_table
from abcde.ids.tagging import CURRENT, HISTORY, SIDE_COLUMN, SIDES, TaggedClusterings, tag_clusterings

__all__ = ["CLASSES", "CURRENT", "HISTORY", "IdTable", "SIDES", "SIDE_COLUMN", "TaggedClusterings", "id_table",
           "tag_clusterings"]
