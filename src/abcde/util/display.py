"""One number style for everything a person reads: the terminal, the notebook (``_repr_html_``)
and, through the same rules, the pages.

- a rate (SplitRate, MergeRate, JaccardDistance, a weight share) as a percentage with 3 decimals;
- an estimate of a rate (GoodSplitRate, BadSplitRate, GoodMergeRate, BadMergeRate) or of a part of
  JaccardDistance (GoodSplitDistance, …, GoodDistance, BadDistance), its standard error and interval
  as percentages too, so they read as the SplitRate, MergeRate and JaccardDistance they decompose
  (:func:`estimate`);
- any other estimate or standard error (ΔPrecision, Precision) with 4 decimals (``n/a`` when
  undefined; a rounding residue such as 3e-11 reads 0.0000);
- a count with thousands separators; a weight by its magnitude (integers as counts, otherwise
  6 significant digits, no exponent);
- a missing value as ``(null)``.

And one rule for text from data on a terminal (:func:`safe_text`, :func:`safe_console`,
:func:`styled`): an id, a value, a path or an option is printed as the text it is, never read as
rich markup (``[bold]``, ``[/]``, ``[link=…]``) or emoji codes, and its control characters (an
escape sequence, a carriage return, a bidi override) are shown, never obeyed.
"""

from __future__ import annotations

import functools
import html
import math
import re
import string

#: How a missing value (a null attribute) is shown.
NULL_TEXT = "(null)"

#: Decimals of a rate shown as a percentage, and of an estimate or a standard error.
PCT_DIGITS = 3
ESTIMATE_DIGITS = 4

#: The rules above as data, for the pages: ``assets/common.js`` reads them (``abcde.style()``) and
#: formats with the same rules (``abcde.pct``, ``abcde.four``, ``abcde.weight``, ``abcde.count``);
#: tests/test_display.py runs both on the same values in Chromium.
#: The estimates shown as percentages (rates of the total weight, like the impact rates).
PERCENT_ESTIMATES = ("good_split_rate", "bad_split_rate", "good_merge_rate", "bad_merge_rate",
                     "good_split_distance", "bad_split_distance", "good_merge_distance", "bad_merge_distance",
                     "good_distance", "bad_distance", "recall_lift")
STYLE = {"pct_digits": PCT_DIGITS, "estimate_digits": ESTIMATE_DIGITS, "null": NULL_TEXT,
         "percent_estimates": list(PERCENT_ESTIMATES)}


def pct(v) -> str:
    """A rate as a percentage with 3 decimals (``n/a`` when undefined). A value that 3 decimals would
    show as 0 but is not (above float noise, :data:`TINY`) keeps two significant digits, as
    :func:`four` does, and 0 never carries a minus sign.

    >>> pct(0.0123), pct(-2e-7), pct(-0.0), pct(-1e-12)
    ('1.230%', '-0.000020%', '0.000%', '0.000%')
    """
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/a"
    x, digits = 100 * v, PCT_DIGITS
    if TINY <= abs(v) and abs(x) < 0.5 * 10.0 ** -PCT_DIGITS:
        digits = 1 - math.floor(math.log10(abs(x)))
    text = f"{x:.{digits}f}"
    return (text[1:] if text == "-0." + "0" * PCT_DIGITS else text) + "%"


#: Below this a value is float noise around 0 (a sum of terms that cancel), shown as 0.
TINY = 5e-9


def four(v) -> str:
    """An estimate or a standard error: 4 decimals; ``n/a`` when undefined. A value that 4 decimals
    would show as 0 but is not (below 0.00005, above float noise) keeps two significant digits, so a
    real, tiny change is never printed as none.

    >>> four(0.00123), four(-0.000031), four(0.0), four(1e-12)
    ('0.0012', '-0.000031', '0.0000', '0.0000')
    """
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/a"
    digits = ESTIMATE_DIGITS
    if TINY <= abs(v) < 0.5 * 10.0 ** -ESTIMATE_DIGITS:
        digits = 1 - math.floor(math.log10(abs(v)))
    text = f"{v:.{digits}f}"
    return text[1:] if text == "-" + "0." + "0" * ESTIMATE_DIGITS else text


def interval(e: dict) -> str:
    """An estimate's 95% interval (``ci_low``, ``ci_high`` of ``Estimate.to_dict()``), ends as :func:`four`.

    >>> interval({"ci_low": -0.01, "ci_high": 0.02}), interval({"ci_low": None, "ci_high": None})
    ('[-0.0100, 0.0200]', 'n/a')
    """
    return "n/a" if e["ci_low"] is None else f"[{four(e['ci_low'])}, {four(e['ci_high'])}]"


def estimate(metric: str, v) -> str:
    """An estimate or its standard error in its metric's style: a rate (:data:`PERCENT_ESTIMATES`)
    as :func:`pct`, anything else as :func:`four`.

    >>> estimate("good_split_rate", 0.1074), estimate("delta_precision", -0.0058)
    ('10.740%', '-0.0058')
    """
    return pct(v) if metric in PERCENT_ESTIMATES else four(v)


def estimate_interval(metric: str, e: dict) -> str:
    """:func:`interval` in its metric's style (:func:`estimate`).

    >>> estimate_interval("bad_merge_rate", {"ci_low": 0.0022, "ci_high": 0.0059})
    '[0.220%, 0.590%]'
    """
    if e["ci_low"] is None:
        return "n/a"
    return f"[{estimate(metric, e['ci_low'])}, {estimate(metric, e['ci_high'])}]"


def zero_se_note(metric: str, e: dict) -> str:
    """Why an estimate (``Estimate.to_dict()``) shows a standard error of 0 beside a 95% interval
    with width, or "" when it does not: its judgements agreed (all "same" or all "different", within
    each stratum), so they have no spread; its interval does not rest on that standard error alone
    (Agresti–Coull's for a judged share, a Jeffreys floor under a model + people variance), so a few
    agreeing judgements never make a point.

    >>> zero_se_note("good_split_rate", {"std_err": 0.0, "ci_low": 0.0, "ci_high": 0.0123, "method": "paper"})
    "s.e. 0: the judgements all agree (per stratum); Agresti–Coull's interval still has width"
    >>> zero_se_note("delta_precision", {"std_err": 0.01, "ci_low": -0.02, "ci_high": 0.02})
    ''
    """
    se, lo, hi = e.get("std_err"), e.get("ci_low"), e.get("ci_high")
    if se is None or lo is None or hi is None or not hi > lo or estimate(metric, se).strip("0.%-") != "":
        return ""
    if se > 1e-12:  # not 0, only shown as 0
        return f"s.e. {se:.1e}, shown as {estimate(metric, se)}"
    how = ("the interval's variance has a floor (Jeffreys')" if str(e.get("method") or "").startswith("prediction")
           else "the interval is read off draws of each stratum's share from its Jeffreys posterior, which has "
                "width" if metric == "recall_lift"
           else "Agresti–Coull's interval still has width")
    return f"s.e. 0: the judgements all agree (per stratum); {how}"


def count(v) -> str:
    return f"{v:,}"


def weight(v) -> str:
    """A weight by its magnitude: a whole number as a count, otherwise 6 significant digits."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/a"
    if float(v).is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    if abs(v) >= 1e6:
        return f"{v:,.0f}"
    digits = min(12, max(0, 5 - math.floor(math.log10(abs(v)))))
    return f"{v:,.{digits}f}".rstrip("0").rstrip(".")


def html_table(title: str, rows: list[tuple[str, str]] | list[list[str]], header: list[str] | None = None,
               note: str | None = None) -> str:
    """A small HTML table for a notebook: a caption, an optional header row, text cells (escaped)."""
    e = html.escape
    head = "".join(f"<th style='text-align:right'>{e(h)}</th>" for h in header) if header else ""
    body = "".join("<tr>" + "".join(
        f"<td style='text-align:{'left' if k == 0 else 'right'}'>{e(str(c))}</td>" for k, c in enumerate(r))
        + "</tr>" for r in rows)
    foot = f"<p style='color:#666;margin:.3em 0 0'>{e(note)}</p>" if note else ""
    return (f"<div class='abcde'><table><caption style='text-align:left;font-weight:600'>{e(title)}</caption>"
            f"{'<thead><tr>' + head + '</tr></thead>' if head else ''}<tbody>{body}</tbody></table>{foot}</div>")


# -- text from data on a terminal ---------------------------------------------------------------

#: What a terminal would obey rather than show: C0 controls (ESC starts colours, OSC 8 hyperlinks,
#: cursor moves; CR rewrites a line), DEL and C1 controls (U+009B is a CSI of its own); the bidi
#: controls that reorder what is shown (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069:
#: "Trojan Source"); invisible characters that make two texts look alike (U+200B, U+2060–U+2064,
#: U+FEFF, U+FFF9–U+FFFB); the line and paragraph separators U+2028, U+2029; and lone surrogates
#: (a path's undecodable bytes), which no terminal encoding can print.
_SHOWN = r"\x7f-\x9f\u061c\u200b\u200e\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ud800-\udfff\ufeff\ufff9-\ufffb"
_UNSAFE_RE = re.compile(rf"[\x00-\x1f{_SHOWN}]")
#: The same but a newline, for a message of several lines.
_UNSAFE_BUT_NEWLINE_RE = re.compile(rf"[\x00-\x09\x0b-\x1f{_SHOWN}]")
_NAMED = {"\n": r"\n", "\r": r"\r", "\t": r"\t"}


def _visible(m: re.Match) -> str:
    c = m.group()
    o = ord(c)
    return _NAMED.get(c) or (f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}")


def safe_text(value, *, lines: bool = False) -> str:
    """``value`` (``str()`` of it) as text safe to print on a terminal: each character a terminal
    would obey rather than show (listed above) as its Python escape, so it is seen and
    never acted on; everything else, brackets included, unchanged. ``lines``: a message of several
    lines, whose newlines stay; otherwise (a table cell, an id, a value inside a message) a newline
    is shown as ``\\n`` too. Idempotent.

    >>> print(safe_text("\\x1b[31mred"), safe_text("a\\rb"), safe_text("\\u202eevil"), safe_text("[/] ok"))
    \\x1b[31mred a\\rb \\u202eevil [/] ok
    >>> print(safe_text("two\\nlines"), safe_text("two\\nlines", lines=True))
    two\\nlines two
    lines
    """
    text = value if isinstance(value, str) else str(value)
    return (_UNSAFE_BUT_NEWLINE_RE if lines else _UNSAFE_RE).sub(_visible, text)


#: Where a field of a :func:`styled` template goes while the template's markup is read
#: (private-use characters, never in a template).
_FIELD = re.compile("\ue000([0-9]+)\ue001")


def styled(template: str, /, *values, **named):
    """abcde's own rich markup ``template`` with ``str.format`` fields (e.g. ``"[bold]Next:[/bold] {}"``
    or ``"{n:,} items"``), each field filled with a value from data as the text it is
    (:func:`safe_text`, on one line) in the style the markup gives that place: a ``rich.text.Text``.
    The template's markup is read on its own, the values never are: whatever brackets, backslashes
    or escape sequences a value holds, it is shown as itself. The one way a message both has
    styles and names data.

    >>> t = styled("[bold]{}[/bold]: {n:,} items", "[/]\\x1b", n=1234)
    >>> print(t.plain)
    [/]\\x1b: 1,234 items
    >>> t.spans
    [Span(0, 7, 'bold')]
    """
    from rich.text import Text  # lazy: start-up time

    fields: list[str] = []
    marked = ""
    auto = 0
    formatter = string.Formatter()
    for literal, name, spec, conversion in formatter.parse(template):
        marked += literal
        if name is None:
            continue
        if name == "":
            name, auto = str(auto), auto + 1
        value, _ = formatter.get_field(name, values, named)
        value = formatter.convert_field(value, conversion)
        fields.append(safe_text(format(value, formatter.vformat(spec or "", values, named))))
        marked += f"\ue000{len(fields) - 1}\ue001"
    shaped = Text.from_markup(marked, emoji=False)
    out, at = Text(), 0
    for m in _FIELD.finditer(shaped.plain):
        out.append_text(shaped[at:m.start()])
        start = len(out)
        out.append(fields[int(m.group(1))])
        for span in shaped.spans:  # the styles the markup gives this place, in their order
            if span.start <= m.start() and m.end() <= span.end:
                out.stylize(span.style, start, len(out))
        at = m.end()
    out.append_text(shaped[at:])
    return out


@functools.cache
def _safe_console_class():
    from rich.console import Console  # lazy: start-up time
    from rich.segment import Segment

    class SafeConsole(Console):
        """A rich console on which text is always the text it is: strings are never read as markup
        or emoji codes (styles come from :func:`styled` or ``style=``), and control characters are
        shown (:func:`safe_text`) — in strings when they become text, so tables measure what is
        shown; in whatever else is rendered as a last resort."""

        def render_str(self, text: str, **kwargs):
            kwargs.update(markup=False, emoji=False)
            return super().render_str(safe_text(text, lines=True), **kwargs)

        def render(self, renderable, options=None):
            for seg in super().render(renderable, options):
                if not seg.control and _UNSAFE_BUT_NEWLINE_RE.search(seg.text):
                    seg = Segment(safe_text(seg.text, lines=True), seg.style, seg.control)
                yield seg

    return SafeConsole


def safe_console(**kwargs):
    """A ``rich.console.Console`` (``kwargs`` as its own) that prints every string as the text it
    is (see :func:`safe_text`): what every table and message of abcde goes through, on stdout
    (``abcde.cli.tables.console``) and stderr (``abcde.util.progress``)."""
    return _safe_console_class()(markup=False, emoji=False, **kwargs)
