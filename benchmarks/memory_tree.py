"""Memory of a whole run as a user starts it: the `redjury run` process and every process
it starts (worker processes, Ray's), sampled through the run (benchmark case 5).

    python benchmarks/memory_tree.py --attempts 10000000 [--workers 2] [--resume]

`sample_run` starts a command, and every `INTERVAL_S` sums the resident memory (RSS) of
the process and all its descendants (psutil), with the run's progress: the attempt rows in
its report so far (new bytes counted as they come) against the attempts it judges.
`memory_at` takes the peak RSS around each mark (10 %, 50 %, 100 % of the attempts; for a
resume, which writes no new rows, of the run's time), and `check_flat` says whether the
100 % figure is within `FLAT_RATIO` of the 10 % one. A check that has no sample for a mark
fails: a figure of 0 MB is a measurement that did not happen, not a flat one.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import data  # noqa: E402

INTERVAL_S = 0.2
FLAT_RATIO = 1.2
MARKS = (0.1, 0.5, 1.0)
# The samples that count for a mark: progress within this much below it.
MARK_WINDOW = 0.05


@dataclass
class Samples:
    """(progress 0..1, RSS of the process tree in MB) per sample, in time order."""

    points: list[tuple[float, float]] = field(default_factory=list)
    seconds: float = 0.0
    returncode: int | None = None
    stderr: str = ""

    @property
    def peak(self) -> float:
        return max((rss for _, rss in self.points), default=0.0)


def tree_rss_mb(proc: psutil.Process) -> float:
    """RSS of `proc` and all its descendants (a process that ended meanwhile counts 0)."""
    total = 0
    for p in [proc, *_children(proc)]:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            continue
    return total / (1 << 20)


def _children(proc: psutil.Process) -> list[psutil.Process]:
    try:
        return proc.children(recursive=True)
    except psutil.Error:
        return []


class LineCounter:
    """Lines written to a growing file so far, counting only the bytes new since last time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.lines = 0

    def count(self) -> int:
        try:
            with self.path.open("rb") as fh:
                fh.seek(self.offset)
                while chunk := fh.read(1 << 22):
                    self.lines += chunk.count(b"\n")
                    self.offset += len(chunk)
        except OSError:
            pass
        return self.lines


def sample_run(
    cmd: list[str], progress_file: Path | None, total: int, interval: float = INTERVAL_S
) -> Samples:
    """Run `cmd`, sampling its process tree's RSS with its progress: lines in
    `progress_file` over `total`, or (None) the time elapsed over the whole run's time."""
    counter = LineCounter(progress_file) if progress_file is not None else None
    out = Samples()
    raw: list[tuple[float, float, float]] = []  # (seconds, lines, rss)
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        popen = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        proc = psutil.Process(popen.pid)
        while popen.poll() is None:
            rss = tree_rss_mb(proc)
            lines = counter.count() if counter is not None else 0
            raw.append((time.perf_counter() - t0, lines, rss))
            time.sleep(interval)
        out.seconds = time.perf_counter() - t0
        out.returncode = popen.returncode
        err.seek(0)
        out.stderr = err.read().decode(errors="replace")[-3000:]
    for seconds, lines, rss in raw:
        progress = lines / total if counter is not None else seconds / out.seconds
        out.points.append((min(progress, 1.0), rss))
    return out


def memory_at(points: list[tuple[float, float]]) -> dict[str, float | None]:
    """The peak RSS among the samples at each mark (progress in [mark - window, mark], and
    for 100 %, everything from there to the end); None where no sample fell."""
    out: dict[str, float | None] = {}
    for mark in MARKS:
        near = [rss for p, rss in points if mark - MARK_WINDOW <= p <= mark]
        out[f"{int(mark * 100)}%"] = max(near) if near else None
    return out


def check_flat(at: dict[str, float | None], ratio: float = FLAT_RATIO) -> tuple[bool, str]:
    """(whether memory is flat, why): every mark measured, none above `ratio` × another."""
    missing = [k for k, v in at.items() if v is None or v <= 0]
    if missing:
        return False, f"no measurement at {', '.join(missing)}"
    values = [v for v in at.values() if v is not None]
    spread = max(values) / min(values)
    if spread > ratio:
        return False, f"RSS grows {spread:.2f}× from the lowest to the highest mark (> {ratio}×)"
    return True, f"within {spread:.2f}× (≤ {ratio}×)"


# -- the benchmark: `redjury run` over N generated attempts ---------------------------------
CONFIG = "detectors:\n  - type: pii_leak\n  - type: prompt_injection\nreporting:\n  seed: 42\n"


def write_attempts(path: Path, n: int) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for i, trigger, texts in data.reply_attempts(n, per_attempt=1, seed=5):
            row = {
                "id": f"m{i}",
                "probe": "bench.Memory",
                "prompt": "benchmark prompt",
                "outputs": texts,
                "notes": {"triggers": [trigger]},
            }
            fh.write(json.dumps(row) + "\n")


def measure(n: int, workers: int | None, tmp: Path, resume: bool = False) -> dict:
    """`redjury run` (the CLI, as a user runs it) over n attempts, sampled; with `resume`,
    then the same command again into the same folder (every attempt already judged)."""
    src, cfg, out = tmp / "memory.jsonl", tmp / "memory.yaml", tmp / "out"
    write_attempts(src, n)
    cfg.write_text(CONFIG)
    cmd = [sys.executable, "-m", "redjury.cli", "run", str(src), "--config", str(cfg)]
    cmd += ["--out", str(out)]
    if workers is not None:
        cmd += ["--workers", str(workers)]
    # The report's first line is its header: one line more than the attempts at the end.
    runs = {"first run": sample_run(cmd, out / "redjury.report.jsonl", n + 1)}
    if resume:
        runs["resume (all judged)"] = sample_run(cmd, None, n)
    result: dict = {"attempts": n, "workers": workers}
    for name, samples in runs.items():
        at = memory_at(samples.points)
        ok, why = check_flat(at)
        if samples.returncode != 0:
            ok, why = False, f"exit {samples.returncode}: {samples.stderr.strip()[-300:]}"
        result[name] = {
            "seconds": round(samples.seconds, 1),
            "peak_rss_mb": round(samples.peak, 1),
            "rss_mb": {k: None if v is None else round(v, 1) for k, v in at.items()},
            "flat": ok,
            "why": why,
            "samples": len(samples.points),
        }
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--attempts", type=int, default=10_000_000)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--resume", action="store_true", help="also measure a rerun into the folder")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        result = measure(args.attempts, args.workers, Path(tmp), args.resume)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
