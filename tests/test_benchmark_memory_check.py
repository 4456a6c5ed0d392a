"""The memory benchmark's own checks (benchmarks/memory_tree.py): a run that leaks fails
them, a run that does not passes, and a run that was not measured never passes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
memory_tree = pytest.importorskip("memory_tree", reason="psutil is not installed")

# A process that writes one progress line per step; with `leak`, it keeps 2 MB more each
# step (touched, so resident), 80 MB in all; without, it holds the same 2 MB throughout.
CHILD = """
import sys, time
out, leak = sys.argv[1], sys.argv[2] == "leak"
kept = []
with open(out, "w") as fh:
    for step in range(40):
        block = bytearray(2 << 20)
        block[::4096] = b"x" * len(block[::4096])
        kept.append(block) if leak else None
        fh.write("row\\n"); fh.flush()
        time.sleep(0.05)
"""


def _steps(rss: list[float]) -> list[tuple[float, float]]:
    return [((i + 1) / len(rss), v) for i, v in enumerate(rss)]


def test_synthetic_flat_samples_pass_and_growing_ones_fail() -> None:
    flat = memory_tree.memory_at(_steps([100.0 + (i % 3) for i in range(100)]))
    assert memory_tree.check_flat(flat)[0]
    leaking = memory_tree.memory_at(_steps([100.0 + i for i in range(100)]))
    ok, why = memory_tree.check_flat(leaking)
    assert not ok and "grows" in why


def test_a_run_with_no_sample_at_a_mark_fails_rather_than_reading_zero() -> None:
    """The defect this replaces: 0 / 0 / 0 MB, marked flat."""
    assert memory_tree.check_flat({"10%": 0.0, "50%": 0.0, "100%": 0.0}) == (
        False,
        "no measurement at 10%, 50%, 100%",
    )
    early_only = memory_tree.memory_at([(0.1, 50.0), (0.5, 50.0)])
    assert early_only["100%"] is None and not memory_tree.check_flat(early_only)[0]


@pytest.mark.parametrize(("mode", "flat"), [("leak", False), ("keep", True)])
def test_a_real_process_is_measured_as_it_runs(tmp_path: Path, mode: str, flat: bool) -> None:
    progress = tmp_path / "progress.txt"
    cmd = [sys.executable, "-c", CHILD, str(progress), mode]
    samples = memory_tree.sample_run(cmd, progress, total=40, interval=0.02)
    assert samples.returncode == 0, samples.stderr
    at = memory_tree.memory_at(samples.points)
    assert memory_tree.check_flat(at)[0] is flat, at
    if not flat:
        assert at["100%"] - at["10%"] > 50  # type: ignore[operator]


def test_the_whole_process_tree_is_measured(tmp_path: Path) -> None:
    """Memory held by a child process (as worker processes hold theirs) is counted."""
    progress = tmp_path / "progress.txt"
    parent = (
        "import subprocess, sys; "
        f"subprocess.run([sys.executable, '-c', {CHILD!r}, {str(progress)!r}, 'leak'])"
    )
    samples = memory_tree.sample_run([sys.executable, "-c", parent], progress, 40, 0.02)
    at = memory_tree.memory_at(samples.points)
    assert not memory_tree.check_flat(at)[0], at
