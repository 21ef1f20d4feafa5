"""Samples: a drawn pair sample and its judgements on disk, importing no estimator (and no Ibis,
no engine: a checked rule, ``pyproject.toml``'s import contracts).

- :mod:`~abcde.samples.sample_dir` — the sample directory's format: writer, reader, blinding rules
- :mod:`~abcde.samples.people_tasks` — which pairs people judge (``pairs --human-budget``), stored with the sample
- :mod:`~abcde.samples.store` — the judgement ledger (``judgements.sqlite``): one read path, one write path
- :mod:`~abcde.samples.ledger_rows` — the ledger's tables and rows (``SCHEMA``, ``Recorded``, ``utc_now``)
- :mod:`~abcde.samples.ledger_rules` — what a judgement written may be (``validate``) and its errors
- :mod:`~abcde.samples.ledger_reads` — the ledger's reads and exports (``live``, ``history``, ``to_table``)
- :mod:`~abcde.samples.ledger_file` — the store file built aside and linked in, and the checks of opening it
- :mod:`~abcde.samples.invites` — its invite links (:class:`~abcde.samples.invites.InviteBook`)
- :mod:`~abcde.samples.raters` — the rater-name rules (``OWNER``, ``check_rater``)
- :mod:`~abcde.samples.sqlite_guard` — the store file's header, log chain and side files
- :mod:`~abcde.samples.dir_lock` — the directory's in-use lock, beside its file name
- :mod:`~abcde.samples.judgements` — judgement files and the vote rule (``vote``, ``resolve``)
- :mod:`~abcde.samples.facts` — the exact facts the sample stores at the draw, read back (``DistanceFacts``,
  ``RecallFacts``)

The estimates of a judged sample are :mod:`abcde.quality`'s; the draws, :mod:`abcde.sampling`'s.
"""
