"""Write ``tests/file_costs.json`` (each test file's seconds) from the output of a whole run with
``--durations=0``, which ``conftest.py`` orders the files by (the costliest first):

    python3 dev.py test --durations=0 | tee run.txt
    python tests/file_costs.py run.txt
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

LINE = re.compile(r"^([0-9.]+)s (?:setup|call|teardown)\s+(\S+?)::")


def file_costs(lines) -> dict:
    """``{test file: seconds}`` summed over its tests' setup, call and teardown lines, costliest first."""
    costs: dict = {}
    for line in lines:
        m = LINE.match(line.strip())
        if m:
            costs[m.group(2)] = costs.get(m.group(2), 0.0) + float(m.group(1))
    return {f: round(s, 1) for f, s in sorted(costs.items(), key=lambda kv: -kv[1])}


if __name__ == "__main__":
    got = file_costs(Path(sys.argv[1]).read_text().splitlines())
    if not got:
        sys.exit(f"{sys.argv[1]}: no '--durations=0' lines (e.g. '12.3s call tests/test_x.py::test_y')")
    out = Path(__file__).with_name("file_costs.json")
    out.write_text(json.dumps(got, indent=1) + "\n")
    print(f"{out}: {len(got)} files, {sum(got.values()):.0f} s in all")
