"""Entity completion (issue 53; ``abcde entities``): pointwise ΔRecall and IQ from a sample of affected items whose
true entities a judge completes (:mod:`abcde.completion.sample`, :mod:`abcde.completion.judgements`,
:mod:`abcde.completion.estimate`), people's answers kept in :mod:`abcde.completion.store`."""

from abcde.completion.estimate import EntityEstimate, EntityQuality, estimate_entities
from abcde.completion.judgements import ANSWERS_FILE, oracle_entities
from abcde.completion.sample import DESIGNS, EntitySample, is_entity_sample, write_entity_sample
from abcde.completion.store import STORE_FILE, EntityStore

__all__ = ["ANSWERS_FILE", "DESIGNS", "EntityEstimate", "EntityQuality", "EntitySample", "EntityStore", "STORE_FILE",
           "estimate_entities", "is_entity_sample", "oracle_entities", "write_entity_sample"]
