"""The Ray engine against the local engine at equal workers (issues 15 and 45): default
detectors over many attempts, the local engine with k worker processes against Ray with k
actors, and a judge panel through Ray actors at C=64, L=200 ms.

    python benchmarks/ray_scale.py [--attempts 100000] [--worker-counts 1,2] [--repeats 3]
                                   [--panel-attempts 51200] [--panel-only | --no-panel]

Every timed run is a fresh process (`--worker ...`) that reports the run's wall time and,
apart from it, the time Ray took to start (`ray.init`, which a run on a running cluster
pays once to attach). Its driver and its whole process tree (driver, Ray's processes,
worker processes) are sampled for memory through the run. Runs alternate (local k, Ray k,
for each k, then again) and each figure is the median of `--repeats`; the load average is
recorded before and after. Efficiency: Ray's attempts per second per worker over the local
engine's at the same number of workers (start-up apart). Writes
benchmarks/results/ray_scale.json and prints the table; exits 1 when the panel reaches less
than 90% of the ideal rate.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import data  # noqa: E402
import memory_tree  # noqa: E402
from run import Server  # noqa: E402

RESULTS = HERE / "results" / "ray_scale.json"
DELAY = 0.2
CONCURRENCY = 64


def write_input(path: Path, n: int) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for i, trigger, texts in data.reply_attempts(n, per_attempt=2, seed=31):
            row = {
                "id": f"r{i}",
                "probe": f"bench.Probe{i % 5}",
                "intent": data.INTENTS[i % len(data.INTENTS)],
                "prompt": f"Explain thing {i % 97}. #{i}",
                "outputs": texts,
                "notes": {"triggers": [trigger]},
            }
            fh.write(json.dumps(row) + "\n")


def write_panel_input(path: Path, n: int) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            row = {"id": f"p{i}", "prompt": f"Do thing {i}", "outputs": [f"Reply #{i}"]}
            fh.write(json.dumps(row) + "\n")


# -- one timed run, in its own process ------------------------------------------------------
def worker(args: argparse.Namespace) -> dict:
    from redjury.config import parse_config
    from redjury.engines import run
    from redjury.pipeline import RunOptions

    config: dict = {"reporting": {"seed": 42}}
    if args.url:
        config["detectors"] = []
        config["evaluation"] = {
            "judges": [
                {
                    "name": "judge-a",
                    "connection": {"type": "OPENAI", "base_url": args.url},
                    "generation": {"temperature": 0.0, "seed": 0},
                    "scoring": {"type": "harmbench"},
                }
            ],
            "max_retries": 0,
            "max_concurrency": CONCURRENCY,
            "per_endpoint_concurrency": CONCURRENCY,
        }
    startup = 0.0
    if args.engine == "ray":
        import ray

        t0 = time.perf_counter()
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        startup = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        result = run(
            RunOptions(
                inputs=[Path(args.input)],
                config=parse_config(config),
                out_dir=Path(tmp) / "out",
                engine=args.engine,
                ray_workers=args.workers if args.engine == "ray" else None,
                workers=args.workers if args.engine == "local" else None,
                use_cache=False,
                progress=False,
                stream=io.StringIO(),
            )
        )
        seconds = time.perf_counter() - t0
    return {
        "engine": args.engine,
        "workers": args.workers,
        "seconds": seconds,
        "ray_start_s": startup,
        "attempts": result.attempts_scored,
        "driver_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def timed(inp: Path, engine: str, workers: int | None = None, url: str | None = None) -> dict:
    """One run in a fresh process, its driver and its whole process tree sampled for memory."""
    with tempfile.NamedTemporaryFile(suffix=".json") as result:
        cmd = [sys.executable, __file__, "--worker", "--input", str(inp), "--engine", engine]
        cmd += ["--workers", str(workers)] if workers else []
        cmd += ["--url", url] if url else []
        driver, tree = sample_rss([*cmd, "--result", result.name])
        out = json.loads(Path(result.name).read_text())
    out["driver_sampled_rss_mb"] = round(driver, 1)
    out["tree_peak_rss_mb"] = round(tree, 1)
    return out


def sample_rss(cmd: list[str]) -> tuple[float, float]:
    """Run `cmd`; the peak RSS of its own process and of its whole tree, in MB, sampled
    every `memory_tree.INTERVAL_S` through the run."""
    driver = tree = 0.0
    with tempfile.TemporaryFile() as err:
        popen = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        proc = psutil.Process(popen.pid)
        while popen.poll() is None:
            with contextlib.suppress(psutil.Error):
                driver = max(driver, proc.memory_info().rss / (1 << 20))
            tree = max(tree, memory_tree.tree_rss_mb(proc))
            time.sleep(memory_tree.INTERVAL_S)
        if popen.returncode != 0:
            err.seek(0)
            raise SystemExit(f"worker failed: {err.read().decode(errors='replace')[-2000:]}")
    return driver, tree


def median_run(runs: list[dict]) -> dict:
    """The median of each figure over repeated runs of one case (the samples kept)."""
    out = dict(runs[0])
    for key in ("seconds", "ray_start_s", "driver_peak_rss_mb", "driver_sampled_rss_mb"):
        out[key] = statistics.median(r[key] for r in runs)
    out["tree_peak_rss_mb"] = statistics.median(r["tree_peak_rss_mb"] for r in runs)
    out["seconds_each"] = [round(r["seconds"], 2) for r in runs]
    out["per_worker_rate"] = out["attempts"] / out["seconds"] / out["workers"]
    return out


def detector_runs(inp: Path, counts: list[int], repeats: int) -> list[dict]:
    """Local k and Ray k alternating, `repeats` times over; the median of each case."""
    samples: dict[tuple[str, int], list[dict]] = {}
    for _ in range(repeats):
        for k in counts:
            for engine in ("local", "ray"):
                samples.setdefault((engine, k), []).append(timed(inp, engine, k))
    runs = []
    for k in counts:
        local, ray = median_run(samples["local", k]), median_run(samples["ray", k])
        ray["efficiency"] = ray["per_worker_rate"] / local["per_worker_rate"]
        runs += [local, ray]
    return runs


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--attempts", type=int, default=100_000)
    parser.add_argument("--worker-counts", default="1,2", help="workers of both engines")
    parser.add_argument("--repeats", type=int, default=3, help="alternating runs per case")
    parser.add_argument("--result", help="(a worker) where to write its result")
    parser.add_argument("--no-panel", action="store_true", help="leave the judge panel out")
    parser.add_argument("--panel-attempts", type=int, default=51_200)
    parser.add_argument("--worker", action="store_true")
    parser.add_argument("--input")
    parser.add_argument("--engine", default="local")
    parser.add_argument("--workers", type=int)
    parser.add_argument("--url")
    parser.add_argument("--panel-only", action="store_true", help="only the judge panel case")
    args = parser.parse_args()
    if args.worker:
        Path(args.result).write_text(json.dumps(worker(args)))
        return 0
    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        if not args.panel_only:
            inp = Path(tmp) / "attempts.jsonl"
            write_input(inp, args.attempts)
            out["load_before"] = os.getloadavg()
            counts = [int(k) for k in args.worker_counts.split(",")]
            out["detectors"] = detector_runs(inp, counts, args.repeats)
            out["load_after"] = os.getloadavg()
            out["input_mb"] = round(inp.stat().st_size / (1 << 20), 1)
        if args.no_panel:
            return report(out, None)
        panel_in = Path(tmp) / "panel.jsonl"
        write_panel_input(panel_in, args.panel_attempts)
        server = Server(DELAY)
        try:
            panel = timed(panel_in, "ray", 2, server.url)
            stats = server.stats()
        finally:
            server.close()
    ideal = args.panel_attempts / CONCURRENCY * DELAY
    panel["ideal_s"] = ideal
    panel["efficiency"] = ideal / panel["seconds"]
    panel["server_max_in_flight"] = stats["max_in_flight"]
    out["panel"] = panel
    return report(out, "ray_scale_panel.json" if args.panel_only else None)


def report(out: dict, name: str | None) -> int:
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.with_name(name or RESULTS.name).write_text(json.dumps(out, indent=2) + "\n")
    head = f"{'run':<20}{'seconds':>8}{'att/s/worker':>13}{'Ray/local':>10}{'ray start':>10}"
    print(head + f"{'driver MB':>10}{'all MB':>8}")
    for r in out.get("detectors", ()):
        name = f"{r['engine']}, {r['workers']} worker(s)"
        eff = f"{r['efficiency']:.2f}" if "efficiency" in r else "—"
        print(
            f"{name:<20}{r['seconds']:>8.1f}{r['per_worker_rate']:>13,.0f}{eff:>10}"
            f"{r['ray_start_s']:>9.1f}s{r['driver_sampled_rss_mb']:>10.0f}"
            f"{r['tree_peak_rss_mb']:>8.0f}"
        )
    if "load_before" in out:
        print(
            f"load average (1, 5, 15 min): before {out['load_before']}, after {out['load_after']}"
        )
    panel = out.get("panel")
    if panel is None:
        return 0
    ideal = panel["ideal_s"]
    print(
        f"judge panel via Ray, C={CONCURRENCY}, L={DELAY * 1000:.0f} ms: {panel['seconds']:.1f} s "
        f"(ideal {ideal:.1f} s, {panel['efficiency']:.0%}), peak in flight "
        f"{panel['server_max_in_flight']}"
    )
    return 0 if panel["efficiency"] >= 0.9 else 1


if __name__ == "__main__":
    raise SystemExit(main())
