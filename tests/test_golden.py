"""The bundled example, end to end: eval rows and terminal text pinned, shown verbatim in the
README and the getting-started page.

Regenerate after an intended change with `REDJURY_UPDATE_GOLDEN=1 pytest tests/test_golden.py`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from redjury_testing import REPO, redjury, rows_of

GOLDEN = Path(__file__).parent / "golden"
START, END = "<!-- golden-terminal:start -->", "<!-- golden-terminal:end -->"
UPDATE = os.environ.get("REDJURY_UPDATE_GOLDEN") == "1"


def _run(tmp_path: Path, *flags: str) -> tuple[list[dict], str]:
    out = tmp_path / ("out" + "".join(flags).replace("-", "_"))
    proc = redjury("run", "examples/attempts.jsonl", "--out", out, "--no-colour", *flags)
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if not ln.startswith(("report: ", "hitlog: "))]
    return rows_of(out / "redjury.report.jsonl", "eval"), "\n".join(lines) + "\n"


def _check(name: str, actual: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.write_text(actual, encoding="utf-8")
    assert actual == path.read_text(encoding="utf-8")


def test_example_eval_rows_match_the_snapshot(tmp_path: Path) -> None:
    evals, _ = _run(tmp_path)
    _check("example_eval.json", json.dumps(evals, indent=1, sort_keys=True) + "\n")


def test_example_terminal_text_matches_the_snapshot_the_readme_and_the_docs(
    tmp_path: Path,
) -> None:
    _, text = _run(tmp_path)
    _check("example_terminal.txt", text)
    block = f"{START}\n```\n{text}```\n{END}"
    for page in (REPO / "README.md", REPO / "docs" / "getting-started.md"):
        if UPDATE:
            head, _, rest = page.read_text(encoding="utf-8").partition(START)
            _, _, tail = rest.partition(END)
            page.write_text(head + block + tail, encoding="utf-8")
        assert block in page.read_text(encoding="utf-8"), page.name


def test_narrow_output_prints_each_probe_once_and_keeps_the_records(tmp_path: Path) -> None:
    wide_evals, _ = _run(tmp_path)
    narrow_evals, text = _run(tmp_path, "--narrow")
    assert narrow_evals == wide_evals
    _check("example_terminal_narrow.txt", text)
    probes = {row["probe"] for row in wide_evals}
    assert sum(1 for ln in text.splitlines() if ln in probes) == len(probes)
    assert all(
        " score " in ln
        for ln in text.splitlines()
        if ln.startswith("  ") and ("PASS" in ln or "FAIL" in ln or "SKIP" in ln)
    )


def test_verbose_prints_failing_outputs_with_control_characters_escaped(tmp_path: Path) -> None:
    from redjury_testing import write_jsonl

    src = write_jsonl(
        tmp_path / "in.jsonl", [{"id": "x", "outputs": ["Sure, here is how:\x1b[31m step 1"]}]
    )
    proc = redjury("run", src, "--out", tmp_path / "o", "-v", "--no-colour")
    assert proc.returncode == 0, proc.stderr
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("❌"))
    assert "\\x1b[31m" in line and "\x1b" not in line
