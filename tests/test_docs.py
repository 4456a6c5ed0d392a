"""The documentation: every page reached by the site's navigation, the generated parts made
from the code, and a README of at most 300 lines whose every command runs as written.

The site itself is built strictly by `.ci/run` (`mkdocs build --strict`); these checks need
no mkdocs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import typer
import yaml
from markdown_it import MarkdownIt
from redjury_testing import REPO

from redjury.cli import app
from redjury.config import reference_markdown
from redjury.detectors.registry import BUILTIN_NAMES
from redjury.docs import GENERATED_PAGES, cli_reference, detector_reference, fill_markers
from redjury.plugins import SCORING_TYPES

DOCS = REPO / "docs"
README = REPO / "README.md"
RUN_PAGES = (README, DOCS / "getting-started.md")  # the pages whose commands are run
CONTRACT = [
    "# redjury",
    "",
    "```",
    "pip install -e . && redjury run examples/attempts.jsonl          # judge the bundled example run",
    "pip install -e '.[test]' && pytest                                # the test suite (CI: bash .ci/run)",
    "```",
]
NOT_RUN = "<!-- not run:"
COMMAND_STARTS = ("redjury ", "pip ", "python ", "$ ", "bash ", "mkdocs ")


def _mkdocs_config() -> dict[str, Any]:
    return yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))


def _nav_pages(nav: Any) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, dict):
        return [p for value in nav.values() for p in _nav_pages(value)]
    return [p for item in nav for p in _nav_pages(item)]


def _written_pages(docs: Path, excluded: set[str]) -> set[str]:
    pages = {p.relative_to(docs).as_posix() for p in docs.rglob("*.md")}
    return {p for p in pages if p.split("/", 1)[0] + "/" not in excluded}


def nav_problems(docs: Path, config: dict[str, Any], generated: set[str]) -> list[str]:
    """Pages the navigation does not reach, and navigation entries with no page."""
    excluded = set(str(config.get("exclude_docs", "")).split())
    nav = set(_nav_pages(config["nav"]))
    written = _written_pages(docs, excluded)
    return [f"{p}: not in the navigation" for p in sorted(written - nav)] + [
        f"{p}: in the navigation, no such page" for p in sorted(nav - written - generated)
    ]


def test_every_page_is_in_the_navigation_and_every_entry_has_a_page() -> None:
    assert nav_problems(DOCS, _mkdocs_config(), set(GENERATED_PAGES)) == []


def test_the_navigation_check_finds_a_stray_page_and_a_dangling_entry(tmp_path: Path) -> None:
    (tmp_path / "guides").mkdir()
    (tmp_path / "index.md").write_text("# a\n")
    (tmp_path / "guides" / "stray.md").write_text("# b\n")
    (tmp_path / "incoming").mkdir()
    (tmp_path / "incoming" / "helper.md").write_text("# left out\n")
    config = {"nav": [{"Home": "index.md"}, {"Gone": "gone.md"}], "exclude_docs": "incoming/\n"}
    assert nav_problems(tmp_path, config, set()) == [
        "guides/stray.md: not in the navigation",
        "gone.md: in the navigation, no such page",
    ]


def test_incoming_pages_are_left_out_of_the_site() -> None:
    assert "incoming/" in _mkdocs_config()["exclude_docs"].split()


def test_the_generated_pages_are_not_written_by_hand() -> None:
    assert [p for p in GENERATED_PAGES if (DOCS / p).exists()] == []


def test_the_cli_reference_holds_every_command() -> None:
    group: Any = typer.main.get_command(app)
    ctx = group.context_class(group, info_name="redjury")
    text = cli_reference()
    for name in group.list_commands(ctx):
        assert f"## `redjury {name}`" in text
    assert "## `redjury detectors list`" in text and "--eval_threshold" in text


def test_the_detector_reference_holds_every_built_in_detector_and_scoring_type() -> None:
    text = detector_reference()
    # The built-ins (a test elsewhere may have registered a detector of its own meanwhile).
    for name in BUILTIN_NAMES:
        assert f"| `{name}` |" in text
    for name in SCORING_TYPES.builtin_names:
        assert f"| `judge:{name}` |" in text


def test_the_configuration_page_gets_its_reference_from_the_models() -> None:
    page = (DOCS / "reference" / "configuration.md").read_text(encoding="utf-8")
    assert "<!-- generated: config-reference -->" in page
    assert reference_markdown().rstrip() in fill_markers(page)
    with pytest.raises(ValueError, match="x.md: unknown generated block 'nope'"):
        fill_markers("<!-- generated: nope -->\n", "x.md")


def test_the_readme_is_a_front_door_with_the_two_commands_first() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300
    assert lines[: len(CONTRACT)] == CONTRACT


class Block(NamedTuple):
    page: str
    line: int
    lang: str
    code: str
    not_run: str


def _blocks(page: Path) -> list[Block]:
    tokens = MarkdownIt().parse(page.read_text(encoding="utf-8"))
    blocks = []
    for before, token in zip([None, *tokens], tokens, strict=False):
        if token.type != "fence":
            continue
        note = before.content.strip() if before is not None and before.type == "html_block" else ""
        blocks.append(
            Block(
                page.name,
                token.map[0] + 1 if token.map else 0,
                token.info.strip(),
                token.content,
                note if note.startswith(NOT_RUN) else "",
            )
        )
    return blocks


RUNNABLE = [b for page in RUN_PAGES for b in _blocks(page) if b.lang in ("sh", "python")]


def test_every_command_is_in_a_block_that_is_run() -> None:
    """A command shown in a block of no language would escape the test below."""
    untagged = [
        f"{b.page}:{b.line}"
        for page in RUN_PAGES
        for b in _blocks(page)
        if b.lang not in ("sh", "python")
        and (b.page, b.line) != ("README.md", 3)  # the contract: .ci/run runs both commands
        and any(ln.lstrip().startswith(COMMAND_STARTS) for ln in b.code.splitlines())
    ]
    assert untagged == []


def test_exclusions_are_few_and_give_a_reason() -> None:
    skipped = [b for b in RUNNABLE if b.not_run]
    assert len(skipped) <= 2
    assert all(len(b.not_run) > len(NOT_RUN) + 20 for b in skipped)


def _fresh_folder(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    return tmp_path


def _run_block(block: Block, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    argv = (
        ["bash", "-euo", "pipefail", "-c", block.code]
        if block.lang == "sh"
        else [sys.executable, "-c", block.code]
    )
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(
    "block",
    [b for b in RUNNABLE if not b.not_run],
    ids=lambda b: f"{b.page}:{b.line}",
)
def test_each_command_block_runs_as_written(block: Block, tmp_path: Path) -> None:
    proc = _run_block(block, _fresh_folder(tmp_path))
    assert proc.returncode == 0, f"{block.page}:{block.line}: {proc.stderr[-2000:]}"


def test_the_readme_s_first_command_judges_the_bundled_example(tmp_path: Path) -> None:
    command = CONTRACT[3].split("&&", 1)[1].split("#", 1)[0].strip()
    block = Block("README.md", 4, "sh", command, "")
    proc = _run_block(block, _fresh_folder(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "pii.customer_records" in proc.stdout
    assert len(list((tmp_path / "runs").glob("*/redjury.report.jsonl"))) == 1


def _exit_codes(page: Path) -> list[int]:
    text = page.read_text(encoding="utf-8")
    table = text[text.index("| code | meaning |") :].split("\n\n", 1)[0]
    return [int(row.split("|")[1]) for row in table.splitlines()[2:]]


def test_the_readme_s_exit_codes_are_the_reference_s_and_the_program_s() -> None:
    from redjury import cli

    codes = _exit_codes(README)
    assert codes == _exit_codes(DOCS / "reference" / "exit-codes.md")
    constants = {v for k, v in vars(cli).items() if k.startswith("EXIT_") and isinstance(v, int)}
    assert constants <= set(codes) and {129, 130, 143} <= set(codes)
