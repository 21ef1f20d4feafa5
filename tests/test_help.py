"""Every command documents every option in its --help (issue 14), --json included."""

from __future__ import annotations

import click
from click.testing import CliRunner

from abcde.cli import main


def commands(group: click.Group, prefix=()):
    for name, cmd in sorted(group.commands.items()):
        path = (*prefix, name)
        if isinstance(cmd, click.Group):
            yield from commands(cmd, path)
        else:
            yield path, cmd


def test_every_option_of_every_command_has_help():
    found = list(commands(main))
    assert len(found) >= 12
    undocumented = [f"abcde {' '.join(path)} {opt.opts[0]}" for path, cmd in found for opt in cmd.params
                    if isinstance(opt, click.Option) and not (opt.help or "").strip()]
    assert undocumented == []
    for path, cmd in found:
        r = CliRunner().invoke(main, [*path, "--help"], terminal_width=200)
        assert r.exit_code == 0, (path, r.output)
        assert (cmd.help or "").strip(), path  # the command says what it does
        for opt in cmd.params:
            if isinstance(opt, click.Option):
                assert opt.opts[0] in r.output, (path, opt.opts[0])
        if any(isinstance(o, click.Option) and "--json" in o.opts for o in cmd.params):
            assert "JSON" in r.output.split("--json", 1)[1].split("\n  -", 1)[0], path
