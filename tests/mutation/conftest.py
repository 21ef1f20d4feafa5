"""Keep pytest (and --doctest-modules) out of the mutation script: it is run by hand,
``python tests/mutation/run.py``, never collected as tests."""

collect_ignore_glob = ["*.py"]
