"""The documentation: every page reached by the site's navigation, the generated parts made
from the code, a README of at most 300 lines whose every command runs as written, and guide
pages whose commands run and whose configs load.

The site itself is built strictly by `.ci/run` (`mkdocs build --strict`); these checks need
no mkdocs.

README.md and docs/getting-started.md: each `sh` / `python` block runs on its own, as
written, in a fresh folder holding a copy of examples/.

The guide pages (docs/guides/*.md, docs/concepts/*.md) are checked page by page: one fresh
folder per page (a copy of examples/; HOME is a fresh folder of its own, so nothing reads or
writes the real user cache), the page's blocks taken in order, so a block can use a file an
earlier block of the same page wrote. By language:

- `sh`, `bash`: run with `bash -euo pipefail`; it must exit 0.
- `python`: run with `python -c`; it must exit 0.
- `console`: each `$ COMMAND` line is run with bash; the lines under it are its output (stdout
  and stderr together, as a terminal shows them) and must each appear in the real output, in
  that order (the page may leave lines out). They are compared with every run of spaces and
  line breaks made one space (a line the program wrapped still matches), and with the page's
  folder removed from paths (`/tmp/.../labels.jsonl` reads as `labels.jsonl`). A last line `exit N` is the exit status expected (else 0).
- `yaml`: a redjury config, loaded through `redjury.config.load_config` from a file in the
  page's folder (so relative paths resolve as they would for a reader): a snippet that
  shows one section must still be a whole, valid config.
- anything else (`toml`, `jsonl`, ...) is shown only, unless a marker says otherwise.

Markers, an HTML comment on the line right above a block (mkdocs does not show it):

- `<!-- not run: REASON -->`: a command block that is not run (a hosted API key, a GPU, a
  service that runs until stopped); at most GUIDE_NOT_RUN_MAX on the guide pages, each with
  a reason.
- `<!-- file: NAME -->`: the block is also written to NAME in the page's folder, for the
  blocks below it (a `yaml` one is still loaded as a config).
- `<!-- not a config: WHAT -->`: a `yaml` block that is another tool's file.
- `<!-- needs: harmbench -->`: a command that reads HarmBench's validation set from the
  download cache; the test puts the real files there ($REDJURY_TEST_DATA/harmbench, or the
  user's download cache); without them that block is left out and the page's test, having
  checked the rest, skips.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import typer
import yaml
from markdown_it import MarkdownIt
from platformdirs import user_cache_dir
from redjury_testing import HARMBENCH_FILES, REPO, TEST_DATA_ENV

from redjury.cli import app
from redjury.config import ConfigError, load_config, reference_markdown
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
GUIDE_PAGES = tuple(sorted([*(DOCS / "guides").glob("*.md"), *(DOCS / "concepts").glob("*.md")]))
COMMAND_LANGS = ("sh", "bash", "console", "python")
#: At most this many command blocks of the guide pages are not run.
GUIDE_NOT_RUN_MAX = 8


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
    note: str  # the HTML comment right above the block, if any

    def marker(self, key: str) -> str | None:
        """The text of a `<!-- KEY: text -->` marker above the block; None without one."""
        found = re.fullmatch(rf"<!--\s*{key}:\s*(.*?)\s*-->", self.note, re.DOTALL)
        return found.group(1) if found else None

    @property
    def not_run(self) -> str:
        return self.note if self.marker("not run") is not None else ""


def _blocks(page: Path) -> list[Block]:
    """The page's fenced blocks, and its indented ones (with no language)."""
    tokens = MarkdownIt().parse(page.read_text(encoding="utf-8"))
    blocks = []
    for before, token in zip([None, *tokens], tokens, strict=False):
        if token.type not in ("fence", "code_block"):
            continue
        note = before.content.strip() if before is not None and before.type == "html_block" else ""
        blocks.append(
            Block(
                page.relative_to(REPO).as_posix() if page.is_relative_to(REPO) else page.name,
                token.map[0] + 1 if token.map else 0,
                token.info.strip(),
                token.content,
                note,
            )
        )
    return blocks


RUNNABLE = [b for page in RUN_PAGES for b in _blocks(page) if b.lang in ("sh", "python")]
#: `VAR=value redjury ...` is a command too.
COMMAND_LINE = re.compile(r"(\w+=\S*\s+)*(redjury|pip|python|bash|mkdocs)\s|\$ ")


def test_every_command_is_in_a_block_that_is_run() -> None:
    """A command shown in a block of no language (or an indented one) would escape the
    tests below."""
    untagged = [
        f"{b.page}:{b.line}"
        for pages, langs in ((RUN_PAGES, ("sh", "python")), (GUIDE_PAGES, COMMAND_LANGS))
        for page in pages
        for b in _blocks(page)
        if b.lang not in langs
        and (b.page, b.line) != ("README.md", 3)  # the contract: .ci/run runs both commands
        and any(COMMAND_LINE.match(ln.lstrip()) for ln in b.code.splitlines())
    ]
    assert untagged == [], "tag each with its language (sh, console, python, ...)"


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


# -- the guide pages --------------------------------------------------------------------------


def test_guide_exclusions_are_few_and_give_a_reason() -> None:
    skipped = [b for page in GUIDE_PAGES for b in _blocks(page) if b.not_run]
    assert len(skipped) <= GUIDE_NOT_RUN_MAX, [f"{b.page}:{b.line}" for b in skipped]
    assert all(len(b.marker("not run") or "") > 20 for b in skipped)
    assert all(b.lang in COMMAND_LANGS for b in skipped)


def test_guide_markers_are_known() -> None:
    """A misspelt marker would silently leave a block unchecked."""
    known = ("not run", "file", "not a config", "needs")
    unknown = [
        f"{b.page}:{b.line}: {b.note}"
        for page in GUIDE_PAGES
        for b in _blocks(page)
        if b.note.startswith("<!--") and not any(b.marker(key) for key in known)
    ]
    assert unknown == []


class PageRun(NamedTuple):
    folder: Path
    env: dict[str, str]


def _page_run(tmp_path: Path) -> PageRun:
    folder = _fresh_folder(tmp_path / "work")
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "REDJURY_"))}
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    env.update(HOME=str(home), NO_COLOR="1")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return PageRun(folder, env)


def _stage_harmbench(home: Path) -> bool:
    """HarmBench's pinned validation set in HOME's download cache, where a reader's
    `redjury audit` finds it; False when no copy is at hand."""
    from redjury.judges.config import DEFAULT_HARMBENCH_REVISION

    root = os.environ.get(TEST_DATA_ENV)
    sources = [Path(root) / "harmbench"] if root else []
    sources.append(Path(user_cache_dir("redjury")) / "calibration" / DEFAULT_HARMBENCH_REVISION)
    for source in sources:
        if all((source / name).is_file() for name in HARMBENCH_FILES):
            target = home / ".cache" / "redjury" / "calibration" / DEFAULT_HARMBENCH_REVISION
            target.mkdir(parents=True)
            for name in HARMBENCH_FILES:
                shutil.copyfile(source / name, target / name)
            return True
    return False


def _config_problems(block: Block, run: PageRun) -> list[str]:
    path = run.folder / (block.marker("file") or f".block-{block.line}.yaml")
    path.write_text(block.code, encoding="utf-8")
    try:
        load_config(path)
    except ConfigError as exc:
        return [f"{block.page}:{block.line}: {_normalise(m, run.folder)}" for m in exc.messages]
    return []


def _normalise(text: str, folder: Path) -> str:
    for prefix in (f"{folder.resolve()}/", f"{folder}/"):
        text = text.replace(prefix, "")
    return " ".join(text.split())


def _console_steps(code: str) -> list[tuple[str, list[str], int]]:
    """(command, the output lines shown, the exit status shown) per `$ ` line."""
    steps: list[tuple[str, list[str], int]] = []
    for line in code.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], [], 0))
        elif steps and re.fullmatch(r"exit \d+", line.strip()):
            steps[-1] = (steps[-1][0], steps[-1][1], int(line.split()[1]))
        elif steps and line.strip():
            steps[-1][1].append(line)
    return steps


def _missing_lines(shown: list[str], output: str, folder: Path) -> list[str]:
    """The shown lines not found, in order, in the output (a line the program wrapped at
    its width still counts)."""
    text, start, missing = _normalise(output, folder), 0, []
    for line in shown:
        found = text.find(_normalise(line, folder), start)
        if found < 0:
            missing.append(line)
        else:
            start = found + len(_normalise(line, folder))
    return missing


def _console_problems(block: Block, run: PageRun) -> list[str]:
    problems = []
    for command, shown, code in _console_steps(block.code):
        proc = subprocess.run(
            ["bash", "-c", command],
            cwd=run.folder,
            env=run.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=300,
        )
        where = f"{block.page}:{block.line}: `{command}`"
        if proc.returncode != code:
            problems.append(f"{where}: exit {proc.returncode}, the page shows {code}")
        missing = _missing_lines(shown, proc.stdout, run.folder)
        if missing:
            problems.append(f"{where}: not in its output: {missing[0]!r}\n{proc.stdout[-3000:]}")
    return problems


def _command_problems(block: Block, run: PageRun) -> list[str]:
    if block.lang == "console":
        return _console_problems(block, run)
    argv = (
        [sys.executable, "-c", block.code]
        if block.lang == "python"
        else ["bash", "-euo", "pipefail", "-c", block.code]
    )
    proc = subprocess.run(
        argv, cwd=run.folder, env=run.env, capture_output=True, text=True, timeout=300
    )
    if proc.returncode == 0:
        return []
    return [f"{block.page}:{block.line}: exit {proc.returncode}: {proc.stderr[-2000:]}"]


def _block_problems(block: Block, run: PageRun) -> list[str]:
    name = block.marker("file")
    if name:
        (run.folder / name).parent.mkdir(parents=True, exist_ok=True)
        (run.folder / name).write_text(block.code, encoding="utf-8")
    if block.lang in ("yaml", "yml") and block.marker("not a config") is None:
        return _config_problems(block, run)
    if block.lang in COMMAND_LANGS and not block.not_run:
        return _command_problems(block, run)
    return []


@pytest.mark.parametrize("page", GUIDE_PAGES, ids=lambda p: p.relative_to(DOCS).as_posix())
def test_each_guide_page_s_commands_run_and_configs_load(page: Path, tmp_path: Path) -> None:
    run = _page_run(tmp_path)
    has_harmbench = _stage_harmbench(Path(run.env["HOME"]))
    problems: list[str] = []
    left: list[str] = []
    for block in _blocks(page):
        if block.marker("needs") == "harmbench" and not has_harmbench:
            left.append(f"{block.page}:{block.line}")
            continue
        problems += _block_problems(block, run)
    assert not problems, "\n".join(problems)
    if left:
        pytest.skip(f"{', '.join(left)}: HarmBench's validation set is not at hand")


BAD_PAGE = """\
<!-- file: bad.yaml -->
```yaml
evaluation:
  judgez: []
```

```console
$ printf 'Audit of x on %s/labels.jsonl:\\n4 samples\\n' "$PWD"; exit 3
Audit of x on labels.jsonl: 4 samples
a line it does not print
exit 0
```

<!-- not run: it would fail, and it is not run -->
```sh
false
```

```python
raise SystemExit(1)
```
"""


def test_the_guide_check_finds_a_renamed_key_a_wrong_output_and_a_failing_block(
    tmp_path: Path,
) -> None:
    page = tmp_path / "bad.md"
    page.write_text(BAD_PAGE, encoding="utf-8")
    run = _page_run(tmp_path)
    problems = [p for block in _blocks(page) for p in _block_problems(block, run)]
    assert [p.split("\n")[0] for p in problems] == [
        "bad.md:2: bad.yaml:2:3: evaluation.judgez: Extra inputs are not permitted",
        "bad.md:7: `printf 'Audit of x on %s/labels.jsonl:\\n4 samples\\n' \"$PWD\"; exit 3`: "
        "exit 3, the page shows 0",
        "bad.md:7: `printf 'Audit of x on %s/labels.jsonl:\\n4 samples\\n' \"$PWD\"; exit 3`: "
        "not in its output: 'a line it does not print'",
        "bad.md:19: exit 1: ",
    ]
    assert (run.folder / "bad.yaml").read_text(encoding="utf-8").startswith("evaluation:")
