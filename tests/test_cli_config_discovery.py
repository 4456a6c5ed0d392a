"""Config discovery: with no `--config`, a redjury.yaml (or .redjury.yaml) in the working
folder is read, and the run says so on the terminal and in its report header."""

from __future__ import annotations

from pathlib import Path

from redjury_testing import REPO, redjury, rows_of

EXAMPLE = REPO / "examples" / "attempts.jsonl"


def _detectors(out: Path) -> set[str]:
    return {r["detector"] for r in rows_of(out / "redjury.report.jsonl", "eval")}


def _header(out: Path) -> dict:
    return rows_of(out / "redjury.report.jsonl", "init")[0]


def test_a_redjury_yaml_in_the_working_folder_is_used_and_named(tmp_path: Path) -> None:
    (tmp_path / "redjury.yaml").write_text("detectors:\n  - type: pii_leak\n")
    proc = redjury("run", EXAMPLE, "--out", tmp_path / "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].startswith("config: redjury.yaml (found in the working")
    assert _detectors(tmp_path / "out") == {"pii_leak"}
    assert _header(tmp_path / "out")["config_path"] == "redjury.yaml"


def test_a_hidden_redjury_yaml_is_found_and_the_plain_name_wins(tmp_path: Path) -> None:
    (tmp_path / ".redjury.yaml").write_text("detectors:\n  - type: prompt_injection\n")
    proc = redjury("run", EXAMPLE, "--out", tmp_path / "a", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "config: .redjury.yaml (found" in proc.stdout
    assert _detectors(tmp_path / "a") == {"prompt_injection"}

    (tmp_path / "redjury.yaml").write_text("detectors:\n  - type: pii_leak\n")
    proc = redjury("run", EXAMPLE, "--out", tmp_path / "b", cwd=tmp_path)
    assert _detectors(tmp_path / "b") == {"pii_leak"}


def test_config_names_another_file_and_nothing_is_searched(tmp_path: Path) -> None:
    (tmp_path / "redjury.yaml").write_text("detectors:\n  - type: pii_leak\n")
    other = tmp_path / "other.yaml"
    other.write_text("detectors:\n  - type: prompt_injection\n")
    proc = redjury("run", EXAMPLE, "--config", other, "--out", tmp_path / "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "found in the working folder" not in proc.stdout
    assert _detectors(tmp_path / "out") == {"prompt_injection"}
    assert _header(tmp_path / "out")["config_path"] == str(other)


def test_no_config_file_anywhere_runs_the_defaults_and_says_nothing(tmp_path: Path) -> None:
    proc = redjury("run", EXAMPLE, "--out", tmp_path / "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not proc.stdout.startswith("config:")
    assert _header(tmp_path / "out")["config_path"] is None
    assert "jailbreak_heuristic" in _detectors(tmp_path / "out")


def test_a_broken_found_config_is_an_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "redjury.yaml").write_text("detectors:\n  - type: no_such_detector\n")
    proc = redjury("run", EXAMPLE, "--out", tmp_path / "out", cwd=tmp_path)
    assert proc.returncode == 2
    assert "redjury.yaml" in proc.stderr
    assert not (tmp_path / "out").exists()
