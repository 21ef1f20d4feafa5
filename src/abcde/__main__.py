"""``python -m abcde ...`` runs the command line; this file is also the driver script
for ``spark-submit`` (``spark-submit [options] "$(python -m abcde --driver-path)" impact ...``)."""

import sys

if __name__ == "__main__":
    if sys.argv[1:] == ["--driver-path"]:
        print(__file__)
        sys.exit(0)
    from abcde.cli import run

    run()
