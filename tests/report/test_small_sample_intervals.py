"""Every rate carries an interval in every view, also below garak's minimum sample: the
terminal's wide line, the summary, JUnit and the HTML bars; `none` turns all of them off."""

from __future__ import annotations

from pathlib import Path

from redjury_testing import REPO, redjury

EXAMPLE = REPO / "examples" / "attempts.jsonl"


def _run(tmp_path: Path, *flags: str) -> tuple[str, Path]:
    out = tmp_path / "out"
    proc = redjury(
        "run", EXAMPLE, "--out", out, "--html", "--junit", tmp_path / "j.xml", "--no-colour", *flags
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, out


def test_small_runs_show_an_interval_in_every_view(tmp_path: Path) -> None:
    stdout, out = _run(tmp_path)
    # pii.customer_records × pii_leak: 2 of 4 failed; Clopper–Pearson 95 % is [6.76 %, 93.24 %].
    line = next(
        ln for ln in stdout.splitlines() if "pii.customer_records" in ln and "pii_leak" in ln
    )
    assert "[6.76%, 93.24%]" in line
    assert "interval [6.76%, 93.24%]" in (tmp_path / "j.xml").read_text()
    html = (out / "redjury.report.html").read_text()
    assert '<g class="ci"' in html and "[6.8%, 93.2%]" in html
    md = tmp_path / "s.md"
    assert redjury("summary", out, "--markdown", md).returncode == 0
    # Markdown cells are written inert (brackets escaped): rendered, this reads [6.8%, 93.2%].
    assert "\\[6.8%, 93.2%\\]" in md.read_text()


def test_method_none_turns_every_interval_off(tmp_path: Path) -> None:
    stdout, out = _run(tmp_path, "--confidence-interval-method", "none")
    assert "%, " not in stdout.replace("attack success rate", "")
    assert "interval [" not in (tmp_path / "j.xml").read_text()
    assert '<g class="ci"' not in (out / "redjury.report.html").read_text()
