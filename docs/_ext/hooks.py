"""MkDocs hooks of the site (mkdocs.yml ``hooks:``; not part of the site).

The pages are written to read the same on GitHub and here. One difference remains: in a table,
GitHub needs a ``|`` inside a code span escaped as ``\\|``, where Python-Markdown keeps pipes in
code spans whole and would show the backslash. The site drops it there.
"""

from __future__ import annotations

import re

_CODE = re.compile(r"`[^`\n]*`")


def on_page_markdown(markdown: str, **kwargs) -> str:
    out, fence = [], False
    for line in markdown.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        elif not fence and line.startswith("|") and "\\|" in line:
            line = _CODE.sub(lambda m: m.group(0).replace("\\|", "|"), line)
        out.append(line)
    return "\n".join(out)
