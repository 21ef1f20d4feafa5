"""A Griffe extension for the API reference (mkdocs.yml loads it; not part of the site).

abcde's docstrings are NumPy style written for Sphinx-like readers. Before mkdocstrings parses
them, this rewrites two things Markdown would show wrongly:

- Sphinx roles (``:func:`abcde.connect```, ``:class:`~abcde.core.diff.Restriction```) become code,
  and a link when they name an object of ``abcde.__all__`` (documented on the API page);
- a NumPy parameter entry naming several parameters (``item_id, cluster_id``) becomes one entry per
  name, so that each shows its own default (Griffe gives all of them the first one's);
- prose that follows a Parameters section, after a blank line and not indented, is put under a
  "Notes" heading (NumPy style would read it as more parameters).
"""

from __future__ import annotations

import re

import griffe

#: The names the API page documents: ``abcde.<name>`` for each of ``abcde.__all__`` (read from the
#: source, so that building the site does not import abcde).
_ALL = re.compile(r'^\s+"(\w+)": "abcde\.[\w.]+",$', re.M)

_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|attr|mod|exc|data|obj|const):`(~?)([\w.]+)(\(\))?`")
_SECTION = re.compile(r"^(\s*)(Parameters|Other Parameters)\n\1-{3,}\n", re.M)
_MULTI = re.compile(r"^(\s*)(\w+(?:, \w+)+)\n((?:\1\s+.*\n|\s*\n)+?)(?=\1\S|\Z)", re.M)


def _documented(root) -> set[str]:
    init = root / "abcde" / "__init__.py"
    return {f"abcde.{n}" for n in _ALL.findall(init.read_text(encoding="utf-8"))} if init.exists() else set()


class AbcdeDocstrings(griffe.Extension):
    def __init__(self) -> None:
        self.documented: set[str] | None = None

    def on_package(self, *, pkg, loader, **kwargs) -> None:
        if pkg.name != "abcde":
            return
        self.documented = _documented(pkg.filepath.parent.parent) if pkg.filepath else set()
        self._walk(pkg, set())

    def _walk(self, obj, seen: set[int]) -> None:
        if id(obj) in seen:
            return
        seen.add(id(obj))
        if obj.docstring is not None:
            obj.docstring.value = self.rewrite(obj.docstring.value)
        for member in obj.members.values():
            if not member.is_alias:
                self._walk(member, seen)

    def rewrite(self, text: str) -> str:
        def role(m: re.Match) -> str:
            short, path, call = m.group(1), m.group(2), m.group(3) or ""
            shown = (path.rsplit(".", 1)[-1] if short else path) + call
            return f"[`{shown}`][{path}]" if path in (self.documented or ()) else f"`{shown}`"

        text = _ROLE.sub(role, text)
        return _split_parameters(text)


def _split_parameters(text: str) -> str:
    out, pos = [], 0
    for sec in _SECTION.finditer(text):
        start = sec.end()
        nxt = re.compile(r"^\s*\w[\w ]*\n\s*-{3,}\n", re.M).search(text, start)
        end = nxt.start() if nxt else len(text)
        body = text[start:end]

        def split(m: re.Match) -> str:
            indent, names, desc = m.group(1), m.group(2).split(", "), m.group(3)
            return "".join(f"{indent}{n}\n{desc}" for n in names)

        body = _notes_after(body, sec.group(1))
        out.append(text[pos:start] + _MULTI.sub(split, body))
        pos = end
    out.append(text[pos:])
    return "".join(out)


_PARAM_LINE = re.compile(r"^\*{0,2}\w+(?:, \*{0,2}\w+)*(?: : .*)?$")


def _notes_after(body: str, indent: str) -> str:
    """A paragraph at the section's indent after a blank line that is no parameter entry starts
    the section's prose: put it under a Notes heading."""
    lines = body.split("\n")
    for k, line in enumerate(lines):
        if k and not lines[k - 1].strip() and line.startswith(indent) and line[len(indent):len(indent) + 1].strip() \
                and not _PARAM_LINE.match(line[len(indent):]):
            return "\n".join([*lines[:k], f"{indent}Notes", f"{indent}-----", *lines[k:]])
    return body
