"""docs/cli.md and the CLI agree, both ways (issue 46, item 5).

- Every command of the typer app (``cluster-inventory``; ``kubectl-inventory`` is the same
  entry point) has a section of docs/cli.md whose heading names it, and every flag of the
  command (each spelling: ``-n`` and ``--namespace``, ``--keep`` and ``--no-keep``) appears in
  that section; the options of the command itself appear in the file.
- Every command line shown in a code block of docs/cli.md, of the other docs/*.md and of the
  README (``$ cluster-inventory ...``, ``$ kubectl inventory ...`` and the synopses) names a
  command that exists, and each of its flags is one that command takes.

The command tree is walked from the app itself, so a new command or flag without docs, or a
documented one that was renamed, fails here.
"""

from __future__ import annotations

import functools
import re
import shlex
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer
from typer.core import TyperArgument, TyperOption

from cluster_inventory.cli.app import app

ROOT = Path(__file__).resolve().parents[3]
CLI_MD = ROOT / "docs" / "cli.md"
#: Every file whose code blocks show commands.
SHOWN_IN = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: How a command line starts: the program, or kubectl running it as its plugin.
PROGRAMS = ("cluster-inventory", "kubectl-inventory")
_FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")


@dataclass(frozen=True)
class Command:
    """One command or group of the app."""

    path: tuple[str, ...]
    command: typer.core.TyperCommand | typer.core.TyperGroup

    @property
    def is_group(self) -> bool:
        return hasattr(self.command, "list_commands")

    def options(self) -> dict[str, TyperOption | None]:
        """Every spelling of every option, and ``--help``."""
        found: dict[str, TyperOption | None] = {"--help": None}
        for param in self.command.params:
            if isinstance(param, TyperOption):
                for flag in (*param.opts, *param.secondary_opts):
                    found[flag] = param
        return found

    def subcommand(self, word: str) -> Command | None:
        if not self.is_group:
            return None
        ctx = typer.Context(self.command)
        found = self.command.get_command(ctx, word)  # type: ignore[union-attr]
        return None if found is None else Command((*self.path, word), found)

    def children(self) -> Iterator[Command]:
        if self.is_group:
            ctx = typer.Context(self.command)
            for name in self.command.list_commands(ctx):  # type: ignore[union-attr]
                child = self.subcommand(name)
                assert child is not None
                yield child


@functools.cache
def root() -> Command:
    return Command((), typer.main.get_command(app))


def leaves(command: Command | None = None) -> Iterator[Command]:
    command = command or root()
    for child in command.children():
        if child.is_group:
            yield from leaves(child)
        else:
            yield child


# -- docs/cli.md's sections ---------------------------------------------------------------


def sections(text: str) -> dict[str, str]:
    """``## `` heading -> the text under it up to the next ``## `` (subsections included)."""
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}


def commands_named(heading: str) -> set[tuple[str, ...]]:
    """The command paths a heading names: ``manager accept and manager reject``, ``a, b``."""
    phrases = re.split(r",\s*|\s+and\s+", heading.replace("`", ""))
    return {tuple(p.split()) for p in phrases if p.strip()}


def section_of(path: tuple[str, ...]) -> str:
    found = [
        body for head, body in sections(CLI_MD.read_text()).items() if path in commands_named(head)
    ]
    assert found, f"docs/cli.md: no '## ' section names `{' '.join(path)}` in its heading"
    return "\n".join(found)


def mentions(text: str, flag: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text) is not None


@pytest.mark.parametrize("command", list(leaves()), ids=lambda c: " ".join(c.path))
def test_every_command_and_each_of_its_flags_is_in_its_section(command: Command) -> None:
    body = section_of(command.path)
    missing = [flag for flag in command.options() if flag != "--help" and not mentions(body, flag)]
    assert not missing, f"docs/cli.md, section of `{' '.join(command.path)}`: no {missing}"
    # The synopsis shows its arguments by their names (NAME, PROFILE, ...).
    for param in command.command.params:
        if isinstance(param, TyperArgument):
            assert (param.metavar or param.name or "").upper().rstrip(".") in body.upper(), (
                f"docs/cli.md, section of `{' '.join(command.path)}`: argument {param.name}"
            )


def test_the_options_of_the_command_itself_are_in_the_common_rules() -> None:
    body = section_of(("Common", "rules"))
    for flag in root().options():
        assert mentions(body, flag), f"docs/cli.md, Common rules: no {flag}"


def test_the_table_of_commands_lists_every_command() -> None:
    table = CLI_MD.read_text().split("## Common rules", 1)[0]
    for command in leaves():
        assert f"`{' '.join(command.path)}" in table, " ".join(command.path)


def test_kubectl_inventory_is_the_same_program() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["kubectl-inventory"] == scripts["cluster-inventory"]


# -- command lines shown anywhere -----------------------------------------------------------


@dataclass(frozen=True)
class Shown:
    """One command line of a code block."""

    file: Path
    line: int
    words: tuple[str, ...]  # after the program
    synopsis: bool  # a usage line ([--flag VALUE] ...), not a line to run

    def __str__(self) -> str:
        return f"{self.file.relative_to(ROOT)}:{self.line}: {' '.join(self.words)}"


def _program_words(tokens: list[str]) -> Iterator[list[str]]:
    """The words after the program, for each simple command of a shell line that runs it."""
    command: list[str] = []
    for token in [*tokens, "|"]:
        if token not in ("|", "||", "&&", ";", "&", "(", ")"):
            command.append(token)
            continue
        words = command
        command = []
        while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
            words = words[1:]  # VAR=value prefixes
        if words[:2] == ["uv", "run"]:
            words = words[2:]
        if words[:2] == ["kubectl", "inventory"]:
            yield words[2:]
        elif words and words[0] in PROGRAMS:
            yield words[1:]


def _blocks(lines: list[str]) -> Iterator[tuple[str, list[tuple[int, str]]]]:
    """``(info string, [(line number, line)])`` of each fenced code block."""
    fence: str | None = None
    body: list[tuple[int, str]] = []
    for number, line in enumerate(lines, 1):
        if line.strip().startswith("```"):
            if fence is not None:
                yield fence, body
                fence, body = None, []
            else:
                fence = line.strip()[3:].strip()
        elif fence is not None:
            body.append((number, line))


def _starts_with_program(text: str) -> bool:
    return text.split(" ", 1)[0] in PROGRAMS


def shown_commands(file: Path) -> Iterator[Shown]:
    """Every command line of the file's fenced code blocks.

    In a block with ``$`` prompts only the prompted lines (and their ``\\`` continuations)
    are commands, the rest is output; in a ``sh`` block every line is; in any other block a
    line that starts with the program is a synopsis, continued on the indented lines below
    it that start with ``[`` or ``-``.
    """
    for fence, body in _blocks(file.read_text().splitlines()):
        if fence not in ("", "console", "sh", "shell", "bash"):
            continue
        prompts = any(line.lstrip().startswith("$ ") for _, line in body)
        shell = prompts or fence in ("sh", "shell", "bash")
        index = 0
        while index < len(body):
            number, line = body[index]
            index += 1
            text = line.strip()
            if prompts:
                if not text.startswith("$ "):
                    continue
                text = text[2:]
            if shell:
                while text.endswith("\\") and index < len(body):
                    text = text[:-1] + " " + body[index][1].strip()
                    index += 1
                lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
                lexer.whitespace_split = True  # a word is split on spaces and operators only
                try:
                    tokens = list(lexer)
                except ValueError as exc:
                    raise AssertionError(f"{file.relative_to(ROOT)}:{number}: {exc}") from None
                for words in _program_words(tokens):
                    yield Shown(file, number, tuple(words), synopsis=False)
            elif _starts_with_program(text):
                while index < len(body) and body[index][1].startswith((" ", "\t")):
                    if not body[index][1].strip().startswith(("[", "-")):
                        break
                    text += " " + body[index][1].strip()
                    index += 1
                yield Shown(file, number, tuple(text.split()[1:]), synopsis=True)


def resolve(shown: Shown) -> tuple[Command, list[str]]:
    """The command a shown line runs, and the words after it; fails for a missing one."""
    command = root()
    words = list(shown.words)
    eager = False  # --version: the group answers by itself
    while command.is_group:
        if not words and eager:
            return command, []
        if not words:
            raise AssertionError(f"{shown}: names the group `{' '.join(command.path)}` alone")
        word = words.pop(0)
        if word.startswith("-"):  # an option of the group itself (--request-timeout 5)
            flag = word.split("=", 1)[0]
            options = command.options()
            assert flag in options, f"{shown}: `{' '.join(command.path)}` has no {flag}"
            option = options[flag]
            if flag == "--help":
                return command, []
            eager = eager or (option is not None and option.is_eager)
            if option is not None and not option.is_flag and "=" not in word and words:
                words.pop(0)
            continue
        child = command.subcommand(word.strip("[]"))
        assert child is not None, f"{shown}: no command `{' '.join((*command.path, word))}`"
        command = child
    return command, words


def flags_of(shown: Shown, words: list[str]) -> list[str]:
    if shown.synopsis:
        return _FLAG.findall(" ".join(words))
    return [w.split("=", 1)[0] for w in words if re.match(r"--?[A-Za-z]", w)]


ALL_SHOWN = [s for file in SHOWN_IN for s in shown_commands(file)]


def test_the_docs_show_commands_at_all() -> None:
    in_cli = [s for s in ALL_SHOWN if s.file == CLI_MD]
    assert len(in_cli) > 60 and any(s.synopsis for s in in_cli)
    assert {s.file for s in ALL_SHOWN} >= {CLI_MD, ROOT / "README.md"}


@pytest.mark.parametrize("shown", ALL_SHOWN, ids=str)
def test_every_command_shown_exists_with_the_flags_it_shows(shown: Shown) -> None:
    command, words = resolve(shown)
    options = command.options()
    unknown = [flag for flag in flags_of(shown, words) if flag not in options]
    assert not unknown, f"{shown}: `{' '.join(command.path)}` takes no {unknown}"
