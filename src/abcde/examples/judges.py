"""A model judge for the bundled example, to try ``abcde judge model --callable`` and the
prediction-powered estimates without an LLM: a plain rule on the FEBRL attributes, right most of
the time and wrong in ways nobody measured in advance, as any model is.

    abcde judge model pairs/ --callable abcde.examples.judges:fields_agree --hide entity_id
"""

from __future__ import annotations

#: The attributes the rule compares.
FIELDS = ("given_name", "surname", "date_of_birth", "postcode", "suburb", "state")


def fields_agree(item_a: dict, item_b: dict) -> str:
    """``same`` when at least 4 of :data:`FIELDS` are equal (and present on both sides),
    ``different`` when at most 2 are, ``unsure`` in between.

    >>> fields_agree({"given_name": "ann", "surname": "lee", "date_of_birth": "1990", "postcode": "2000"},
    ...              {"given_name": "ann", "surname": "lee", "date_of_birth": "1990", "postcode": "2000"})
    'same'
    >>> fields_agree({"given_name": "ann", "surname": "lee"}, {"given_name": "bob", "surname": "ng"})
    'different'
    """
    agree = sum(1 for f in FIELDS if item_a.get(f) not in (None, "") and item_a.get(f) == item_b.get(f))
    return "same" if agree >= 4 else "different" if agree <= 2 else "unsure"
