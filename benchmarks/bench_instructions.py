"""The raters' instructions renderer at the size cap: the worst text for each Markdown mark, timed
against a plain ``html.escape`` of the same text (the least any safe renderer does).

    .venv/bin/python benchmarks/bench_instructions.py
    .venv/bin/python benchmarks/bench_instructions.py --repeat 5 --json

Each text is exactly ``MAX_INSTRUCTIONS`` (64 KB) of ASCII, built to cost one mark the most (``_a``
repeated, backtick runs that never close, a heading of spaces, ...). The first renderer's
regular expressions took 65 s on 63 KB of ``_a _a …`` (quadratic in a line's length); the table
shows the best of ``--repeat`` renders, the same for ``html.escape``, their ratio, and the
characters the renderer visited per character of text (``RenderWork``, what
tests/test_instructions_linear.py bounds). ``--size N`` times another size, to see the time grow
as the text.
"""

from __future__ import annotations

import argparse
import html
import json
import random
import time

from abcde.web.instructions import MAX_INSTRUCTIONS, RenderWork, instructions_html


def fill(unit: str, n: int) -> str:
    return (unit * (n // len(unit) + 1))[:n]


def rising_ticks(n: int) -> str:
    out, k = [], 1
    while sum(map(len, out)) + k + 1 <= n:
        out.append("`" * k + "a")
        k += 1
    return fill("".join(out) + "a" * n, n)


def random_mix(n: int) -> str:
    rng = random.Random(39)
    tokens = list("*_`[]()<>\\#-=> \n\t\"'&!:") + ["a", "https://x.example", "](", "**", "__", "``", "1. ", "# "]
    return fill("".join(rng.choice(tokens) for _ in range(n)), n)


#: name -> the text of n characters that costs that mark the most (as tests/test_instructions_linear.py).
WORST = {
    "_em_  (_a _a …)": lambda n: fill("_a ", n),
    "*em*  (*a *a …)": lambda n: fill("*a ", n),
    "**strong**": lambda n: fill("**a ", n),
    "__strong__": lambda n: fill("__a ", n),
    "backticks never closed": rising_ticks,
    "code spans": lambda n: fill("``a`", n),
    "[ links": lambda n: fill("[", n),
    "]( links": lambda n: fill("[a](", n),
    "link titles": lambda n: fill('[a](x "', n),
    "autolinks": lambda n: fill("<a:", n),
    "\\ escapes": lambda n: fill("\\", n),
    "# heading of spaces": lambda n: "# a" + " " * (n - 4) + "b",
    "headings": lambda n: fill("# a\n", n),
    "lists": lambda n: fill("- * + 1. ", n),
    "quotes": lambda n: fill("> ", n),
    "fences": lambda n: fill("```\n", n),
    "entities": lambda n: fill("&<>\"'*_", n),
    "nested mix": lambda n: fill("*_**__`[a](<b:c> \\", n),
    "random mix": random_mix,
}


def best_of(fn, text: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(text)
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=MAX_INSTRUCTIONS, help="characters per text (default: the cap)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rows = []
    for name, make in WORST.items():
        text = make(a.size)
        work = RenderWork()
        instructions_html(text, work=work)
        ours = best_of(instructions_html, text, a.repeat)
        floor = best_of(html.escape, text, a.repeat)
        rows.append({"mark": name, "chars": len(text), "render_ms": ours * 1e3, "escape_ms": floor * 1e3,
                     "ratio": ours / floor if floor else float("inf"), "visits_per_char": work.visits / len(text)})
    if a.json:
        print(json.dumps(rows, indent=1))
        return
    print(f"{'mark':<26} {'chars':>6} {'render ms':>10} {'escape ms':>10} {'ratio':>7} {'visits/char':>12}")
    for r in rows:
        print(f"{r['mark']:<26} {r['chars']:>6} {r['render_ms']:>10.2f} {r['escape_ms']:>10.3f} {r['ratio']:>7.0f} "
              f"{r['visits_per_char']:>12.1f}")
    worst = max(rows, key=lambda r: r["render_ms"])
    print(f"slowest: {worst['mark']} at {worst['render_ms']:.1f} ms "
          f"(the first renderer: 65 s for 63 KB of '_a _a …')")


if __name__ == "__main__":
    main()
