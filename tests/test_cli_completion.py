"""`redjury completion SHELL`: the script each shell sources, and bash really completing
subcommands and options with it (the real program answers the shell's request)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from redjury_testing import REPO, redjury


def _redjury_on_path(tmp_path: Path) -> Path:
    """A `redjury` executable in a folder of its own: the script calls the program by name."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    program = folder / "redjury"
    program.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m redjury.cli "$@"\n')
    program.chmod(0o755)
    return folder


def _bash_completes(tmp_path: Path, *words: str) -> list[str]:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    script = redjury("completion", "bash").stdout
    (tmp_path / "redjury.bash").write_text(script)
    quoted = " ".join(f"'{w}'" for w in words)
    line = (
        f"source {tmp_path / 'redjury.bash'}; COMP_WORDS=(redjury {quoted}); "
        f"COMP_CWORD={len(words)}; _redjury_completion redjury; "
        'printf "%s\\n" "${COMPREPLY[@]}"'
    )
    path = f"{_redjury_on_path(tmp_path)}:/usr/bin:/bin"
    proc = subprocess.run(
        [bash, "--norc", "-c", line],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"PATH": path, "PYTHONPATH": str(REPO / "src")},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


@pytest.mark.parametrize(
    ("shell", "marker"),
    [
        ("bash", "complete -o default -F _redjury_completion redjury"),
        ("zsh", "compdef _redjury_completion redjury"),
        ("fish", "complete --command redjury"),
    ],
)
def test_completion_prints_each_shells_script(shell: str, marker: str) -> None:
    proc = redjury("completion", shell)
    assert proc.returncode == 0, proc.stderr
    assert marker in proc.stdout
    assert "_REDJURY_COMPLETE" in proc.stdout


def test_an_unknown_shell_is_a_usage_error() -> None:
    proc = redjury("completion", "tcsh")
    assert proc.returncode == 2
    assert "'tcsh' is not one of" in proc.stderr


def test_bash_completes_subcommands_their_options_and_nested_commands(tmp_path: Path) -> None:
    assert _bash_completes(tmp_path, "ca") == ["calibrate", "cache"]
    assert "view" in _bash_completes(tmp_path, "vi")
    assert _bash_completes(tmp_path, "run", "--dry") == ["--dry-run"]
    assert set(_bash_completes(tmp_path, "cache", "")) == {"show", "clear"}
