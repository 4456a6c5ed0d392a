"""The Ray engine against one process (issue 15): default detectors over many attempts, single
process vs Ray with 1 and 2 workers, and a judge panel through Ray actors at C=64, L=200 ms.

    python benchmarks/ray_scale.py [--attempts 1000000] [--panel-attempts 51200] [--panel-only]

Every timed run is a fresh process (`--worker ...`) that reports its wall time, the time Ray
took to start, and the driver's peak RSS. Writes benchmarks/results/ray_scale.json and prints
the table; exits 1 when the panel reaches less than 90% of the ideal rate.
"""

from __future__ import annotations

import argparse
import io
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import data  # noqa: E402
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
                ray_workers=args.workers,
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
    cmd = [sys.executable, __file__, "--worker", "--input", str(inp), "--engine", engine]
    cmd += ["--workers", str(workers)] if workers else []
    cmd += ["--url", url] if url else []
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"worker failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--attempts", type=int, default=1_000_000)
    parser.add_argument("--panel-attempts", type=int, default=51_200)
    parser.add_argument("--worker", action="store_true")
    parser.add_argument("--input")
    parser.add_argument("--engine", default="local")
    parser.add_argument("--workers", type=int)
    parser.add_argument("--url")
    parser.add_argument("--panel-only", action="store_true", help="only the judge panel case")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args)))
        return 0
    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        if not args.panel_only:
            inp = Path(tmp) / "attempts.jsonl"
            write_input(inp, args.attempts)
            local = timed(inp, "local")
            ray1 = timed(inp, "ray", 1)
            ray2 = timed(inp, "ray", 2)
            out["detectors"] = [local, ray1, ray2]
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
    RESULTS.parent.mkdir(exist_ok=True)
    name = "ray_scale_panel.json" if args.panel_only else RESULTS.name
    RESULTS.with_name(name).write_text(json.dumps(out, indent=2) + "\n")
    print(
        f"{'run':<22}{'seconds':>10}{'attempts/s':>12}{'vs local':>10}{'ray start':>11}{'peak MB':>9}"
    )
    base: dict | None = out["detectors"][0] if "detectors" in out else None
    for r in out.get("detectors", ()):
        name = "single process" if r["engine"] == "local" else f"ray, {r['workers']} worker(s)"
        print(
            f"{name:<22}{r['seconds']:>10.1f}{r['attempts'] / r['seconds']:>12,.0f}"
            f"{base['seconds'] / r['seconds'] if base else 0:>9.2f}×{r['ray_start_s']:>10.1f}s"
            f"{r['driver_peak_rss_mb']:>9.0f}"
        )
    print(
        f"judge panel via Ray, C={CONCURRENCY}, L={DELAY * 1000:.0f} ms: {panel['seconds']:.1f} s "
        f"(ideal {ideal:.1f} s, {panel['efficiency']:.0%}), peak in flight "
        f"{panel['server_max_in_flight']}"
    )
    return 0 if panel["efficiency"] >= 0.9 else 1


if __name__ == "__main__":
    raise SystemExit(main())
