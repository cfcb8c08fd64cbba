"""The fast top-level help says what the typer app would say."""

from __future__ import annotations

import subprocess
import sys

import typer

from cluster_inventory.api.constants import REQUEST_TIMEOUT, REQUEST_TIMEOUT_ENV
from cluster_inventory.cli._help import COMMANDS, DESCRIPTION, OPTIONS, top_level_help
from cluster_inventory.cli.app import app


def test_the_table_lists_every_command_of_the_app_with_its_summary() -> None:
    group = typer.main.get_command(app)
    ctx = typer.Context(group)
    theirs = [
        (name, group.get_command(ctx, name).get_short_help_str(limit=200))  # type: ignore[union-attr]
        for name in group.list_commands(ctx)
    ]
    assert sorted(COMMANDS) == sorted(theirs)
    assert group.help == DESCRIPTION


def test_the_table_lists_every_option_of_the_command_itself_with_its_help() -> None:
    group = typer.main.get_command(app)
    theirs = {}
    for param in group.params:
        flag = param.opts[0]
        metavar = f" {param.metavar}" if param.metavar else ""
        extra = ""
        if param.envvar:
            extra += f" [env var: {param.envvar}]"
        if not param.is_flag:
            extra += f" [default: {param.default}]"
        theirs[flag + metavar] = f"{param.help}{extra}"
    theirs["--help"] = "Show this message and exit."
    assert dict(OPTIONS) == theirs
    # The figures the table spells out are the constants the app uses.
    assert (
        f"[env var: {REQUEST_TIMEOUT_ENV}] [default: {REQUEST_TIMEOUT}]"
        in dict(OPTIONS)["--request-timeout SECONDS"]
    )


def test_help_names_the_plugin_when_run_as_kubectl_inventory() -> None:
    assert top_level_help("kubectl inventory").startswith(
        "Usage: kubectl inventory [OPTIONS] COMMAND [ARGS]...\n"
    )
    assert "Run 'kubectl inventory COMMAND --help'" in top_level_help("kubectl inventory")


def test_help_runs_without_importing_typer() -> None:
    probe = (
        "import sys; sys.argv = ['cluster-inventory', '--help'];"
        "from cluster_inventory.cli import main; main();"
        "print('typer' in sys.modules, 'rich' in sys.modules, file=sys.stderr)"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert run.stderr.strip() == "False False"
    for name, summary in COMMANDS:
        assert f"  {name}" in run.stdout and summary in run.stdout
    for flag, text in OPTIONS:  # --request-timeout and --version too, not --help alone
        assert f"  {flag}" in run.stdout and text in run.stdout
