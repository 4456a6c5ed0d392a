"""The documentation site's generated parts, made from the code at build time.

`mkdocs build` calls these through `docs/hooks.py`: the pages of `GENERATED_PAGES` are made
whole (the command-line reference from the typer commands, the detector list from the
registry), and a `<!-- generated: NAME -->` line in a written page is replaced by `MARKERS`'
text (the configuration reference from the pydantic models). Nothing generated is committed,
so it cannot drift from the code. `python -m redjury.docs PAGE` prints one generated page.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import Any

from redjury.config import reference_markdown

CLI_WIDTH = 100
MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.MULTILINE)


def _help_text(command: Any, name: str, parent: Any) -> tuple[str, Any]:
    settings = {**command.context_settings, "terminal_width": CLI_WIDTH}
    settings["max_content_width"] = CLI_WIDTH
    ctx = command.context_class(command, info_name=name, parent=parent, **settings)
    return command.get_help(ctx), ctx


def _command_sections(command: Any, path: str, parent: Any) -> list[str]:
    text, ctx = _help_text(command, path.rsplit(" ", 1)[-1], parent)
    lines = [f"## `{path}`", "", "```text", text.rstrip(), "```", ""]
    for sub in getattr(command, "list_commands", lambda _ctx: [])(ctx):
        lines += _command_sections(command.get_command(ctx, sub), f"{path} {sub}", ctx)
    return lines


def cli_reference() -> str:
    """Every command's `--help`, as the program prints it."""
    import typer

    from redjury.cli import app

    lines = [
        "# Command line",
        "",
        "Generated from the commands themselves when the site is built: each section is the",
        "command's `--help`. garak's spellings of the flags are accepted where listed.",
        "",
    ]
    return "\n".join(lines + _command_sections(typer.main.get_command(app), "redjury", None))


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def detector_reference() -> str:
    """The registry: every built-in detector and judge scoring type, as `detectors list`."""
    from redjury.detectors.registry import detector_classes
    from redjury.judges.scoring import scoring_types

    lines = [
        "# Detector registry",
        "",
        "Generated from the registry when the site is built (`redjury detectors list` prints",
        "the same, plugins included). What each verdict means, and how accurate the heuristics",
        "are, is in [Detectors](../concepts/detectors.md).",
        "",
        "| name | default | family | hazards | description |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, cls in detector_classes().items():
        if not cls.__module__.startswith("redjury."):
            continue  # plugins document themselves
        hazards = ", ".join(cls.hazards) or ("configurable" if name == "guardrail" else "—")
        default = "yes" if cls.default_enabled else ""
        lines.append(
            f"| `{name}` | {default} | {cls.family.value} | {hazards} | {_cell(cls.description)} |"
        )
    lines += ["", "## Judge scoring types", "", "| name | relation | description |"]
    lines.append("| --- | --- | --- |")
    for name, st in scoring_types().items():
        if not str(getattr(st, "__module__", "")).startswith("redjury."):
            continue  # plugins document themselves
        relation = _cell(getattr(st, "relation", ""))
        lines.append(f"| `judge:{name}` | {relation} | {_cell(getattr(st, 'description', ''))} |")
    return "\n".join(lines) + "\n"


GENERATED_PAGES: dict[str, Callable[[], str]] = {
    "reference/cli.md": cli_reference,
    "reference/detector-registry.md": detector_reference,
}
MARKERS: dict[str, Callable[[], str]] = {"config-reference": reference_markdown}


def fill_markers(markdown: str, where: str = "page") -> str:
    """Replace each `<!-- generated: NAME -->` line by the text `MARKERS[NAME]` makes."""

    def make(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in MARKERS:
            raise ValueError(f"{where}: unknown generated block {name!r}")
        return MARKERS[name]().rstrip("\n")

    return MARKER.sub(make, markdown)


if __name__ == "__main__":
    page = sys.argv[1] if len(sys.argv) > 1 else ""
    if page not in GENERATED_PAGES:
        sys.exit(f"usage: python -m redjury.docs {{{','.join(GENERATED_PAGES)}}}")
    print(GENERATED_PAGES[page](), end="")
