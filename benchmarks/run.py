"""redjury against its peers in one command: evaluation + CI, detectors, judge throughput,
judge cache, memory and the bootstrap alone (issue 7).

    python benchmarks/run.py [--quick] [--cases 1,2,3,4,5,6] [--runs 3]

Installs garak 0.17.1 and HackAgent 0.16.0 into their own virtual environments under
benchmarks/.peers/ on first use. Every timed run is a fresh worker process that times only the
region the case names; peer and redjury runs alternate and the medians are compared. Prints
the table, writes benchmarks/results/latest.json and benchmarks/RESULTS.md, and exits 1 when
a goal is missed or redjury's counts differ from garak's.
"""

from __future__ import annotations

import argparse
import compileall
import datetime as dt
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
PEERS = HERE / ".peers"
GARAK_PY = PEERS / "garak" / "bin" / "python"
HACKAGENT_PY = PEERS / "hackagent" / "bin" / "python"
RESULTS_JSON = HERE / "results" / "latest.json"
RESULTS_MD = HERE / "RESULTS.md"
# The cases of a full run.
ALL_CASES = frozenset({"1", "2", "3", "4", "5", "6", "8"})

sys.path.insert(0, str(HERE))
import data  # noqa: E402

PEER_ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONHASHSEED": "0"}
PEER_ENV.pop("PYTHONPATH", None)


@dataclass(frozen=True)
class Sizes:
    eval_attempts: int
    replies_attempts: int  # × 5 replies
    panel_attempts: int
    hackagent_default_attempts: int
    hackagent_wide_attempts: int
    memory_attempts: int
    bootstrap_n: int
    iterations: int


FULL = Sizes(20_000, 20_000, 2_000, 100, 600, 1_000_000, 100_000, 10_000)
QUICK = Sizes(4_000, 2_000, 300, 15, 120, 100_000, 100_000, 10_000)


@dataclass
class Row:
    case: str
    measure: str
    redjury: str
    peer: str
    ratio: float | None  # peer / redjury, for times; higher is better for redjury
    goal: str
    met: bool | None  # None: reported, no goal

    def cells(self) -> list[str]:
        ratio = "—" if self.ratio is None else f"{self.ratio:,.1f}×"
        status = "—" if self.met is None else ("met" if self.met else "MISSED")
        return [self.case, self.measure, self.redjury, self.peer, ratio, self.goal, status]


# -- peers --------------------------------------------------------------------------------
def _pip(python: Path, *packages: str, no_deps: bool = False) -> None:
    cmd = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    cmd += ["--no-deps"] if no_deps else []
    subprocess.run([*cmd, *packages], check=True, env=PEER_ENV, timeout=1800)


def ensure_peers(need_garak: bool, need_hackagent: bool) -> None:
    """Each peer in its own venv under .peers/, installed once (a marker file says it is)."""
    PEERS.mkdir(exist_ok=True)
    wanted = []
    if need_garak:
        wanted.append(
            (
                "garak",
                GARAK_PY,
                ["garak==0.17.1", "numpy", "colorama", "pyyaml", "xdg-base-dirs"],
                True,
            )
        )
    if need_hackagent:
        wanted.append(("hackagent", HACKAGENT_PY, ["hackagent==0.16.0"], False))
    for name, python, packages, no_deps in wanted:
        marker = PEERS / f"{name}.installed"
        if marker.exists() and python.exists():
            continue
        print(f"installing {name} into {PEERS / name} ...", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(PEERS / name)], check=True)
        _pip(python, *packages, no_deps=no_deps)
        marker.write_text(" ".join(packages) + "\n")


# -- workers ------------------------------------------------------------------------------
def worker(python: Path | str, script: Path, *args: object, timeout: float = 1800) -> dict:
    """Run one worker process; its last stdout line is the JSON result."""
    env = PEER_ENV if str(python) != sys.executable else os.environ
    proc = subprocess.run(
        [str(python), str(script), *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{script.name} {args} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def garak(*args: object) -> dict:
    return worker(GARAK_PY, HERE / "peers" / "garak_worker.py", *args)


def hackagent(*args: object) -> dict:
    return worker(HACKAGENT_PY, HERE / "peers" / "hackagent_worker.py", *args)


def redjury(*args: object) -> dict:
    return worker(sys.executable, HERE / "redjury_worker.py", *args)


def alternate(runs: int, *sides):  # type: ignore[no-untyped-def]
    """Call each side once per round, in turn, for `runs` rounds; the results per side."""
    results: list[list[dict]] = [[] for _ in sides]
    for _ in range(runs):
        for i, side in enumerate(sides):
            results[i].append(side())
    return results


def med(results: list[dict], key: str = "seconds") -> float:
    return statistics.median(r[key] for r in results)


def _fmt_s(seconds: float) -> str:
    return f"{seconds * 1000:,.1f} ms" if seconds < 1 else f"{seconds:,.2f} s"


# -- the scripted judge server --------------------------------------------------------------
class Server:
    def __init__(self, delay: float) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "judge_server.py"), "--delay", str(delay)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.port = int(self.proc.stdout.readline())
        self.url = f"http://127.0.0.1:{self.port}"

    def _call(self, path: str, method: str = "GET") -> dict:
        req = urllib.request.Request(
            self.url + path, method=method, data=b"" if method == "POST" else None
        )
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())

    def reset(self) -> None:
        self._call("/reset", "POST")

    def stats(self) -> dict:
        return self._call("/stats")

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def measured(server: Server, fn):  # type: ignore[no-untyped-def]
    """Run fn with the server's counters reset; the worker result plus the server's counts."""
    server.reset()
    out = fn()
    s = server.stats()
    out["server_requests"] = s["requests"]
    out["server_cpu_s"] = s["cpu_s"]
    out["server_max_in_flight"] = s["max_in_flight"]
    return out


def compile_bytecode() -> None:
    """redjury's modules compiled to bytecode before the whole runs are timed, as installing
    a wheel does (pip compiles every module) and as any run after the first has them where
    Python may write its cache. An editable install on a machine with
    PYTHONDONTWRITEBYTECODE set would otherwise compile ~400 KB of source in every run."""
    spec = importlib.util.find_spec("redjury")
    if spec is None or spec.origin is None:
        raise RuntimeError("redjury is not installed in this Python")
    if not compileall.compile_dir(Path(spec.origin).parent, quiet=1):
        raise RuntimeError("compiling redjury's modules to bytecode failed")


# -- cases --------------------------------------------------------------------------------
def case_evaluation(sz: Sizes, runs: int, tmp: Path) -> tuple[list[Row], dict]:
    n = sz.eval_attempts
    # garak's report file of the same attempts, for the whole `redjury run` process.
    report = tmp / "garak.report.jsonl"
    garak("write-report", "--attempts", n, "--out", report)
    # The same attempts as a garak run writes them: answered rows, then scored rows.
    run_report = tmp / "garak.run.report.jsonl"
    garak("write-report", "--attempts", n, "--out", run_report, "--as-a-run")
    cfg = tmp / "eval.yaml"
    cfg.write_text(
        f"detectors: []\nreporting:\n  seed: 42\n  bootstrap_num_iterations: {sz.iterations}\n"
    )
    exe = shutil.which("redjury", path=str(Path(sys.executable).parent)) or "redjury"
    compile_bytecode()
    runs_made = iter(range(2 * runs))

    def whole_run(path: Path = report) -> dict:
        # Timed in the same rounds as garak's side, so both see the machine as it is then.
        out = tmp / f"cli{next(runs_made)}"
        t0 = time.perf_counter()
        proc = subprocess.run(
            [exe, "run", str(path), "-c", str(cfg), "-o", str(out), "--no-colour"],
            capture_output=True,
            text=True,
        )
        seconds = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"redjury run failed: {proc.stderr[-2000:]}")
        counts = None
        for line in (out / "redjury.report.jsonl").open(encoding="utf-8"):
            row = json.loads(line)
            if row.get("entry_type") == "eval":
                counts = {k: row[k] for k in ("passed", "fails", "nones")}
        return {"seconds": seconds, "counts": counts}

    g_on, r_on, g_off, r_off, r_cli, r_run = alternate(
        runs,
        lambda: garak(
            "evaluate", "--attempts", n, "--ci", "bootstrap", "--iterations", sz.iterations
        ),
        lambda: redjury(
            "evaluate", "--attempts", n, "--ci", "bootstrap", "--iterations", sz.iterations
        ),
        lambda: garak("evaluate", "--attempts", n, "--ci", "none"),
        lambda: redjury("evaluate", "--attempts", n, "--ci", "none"),
        whole_run,
        lambda: whole_run(run_report),
    )
    expected = data.expected_counts(data.scored_attempts(n))
    same = all(
        r["counts"] == g_on[0]["counts"] == expected
        and r["intents"] == g_on[0]["intents"]
        and r["hitlog_rows"] == g_on[0]["hitlog_rows"]
        for r in (*g_on, *r_on, *g_off, *r_off)
    )
    cli_times = [r["seconds"] for r in r_cli]
    cli_counts = r_cli[-1]["counts"]
    same_cli = all(r["counts"] == expected for r in (*r_cli, *r_run))
    as_run = statistics.median(r["seconds"] for r in r_run)
    ratio_on = med(g_on) / med(r_on)
    ratio_off = med(g_off) / med(r_off)
    cli = statistics.median(cli_times)
    ratio_cli = med(g_on) / cli
    outs = n * data.GENERATIONS
    rows = [
        Row(
            "1",
            f"evaluate + bootstrap CI ({n:,} × 5 outputs, B={sz.iterations:,})",
            _fmt_s(med(r_on)),
            _fmt_s(med(g_on)),
            ratio_on,
            "≥ 50×",
            ratio_on >= 50,
        ),
        Row(
            "1",
            f"evaluate, CI off ({outs:,} outputs)",
            _fmt_s(med(r_off)),
            _fmt_s(med(g_off)),
            ratio_off,
            "≥ 5×",
            ratio_off >= 5,
        ),
        Row(
            "1",
            "whole `redjury run` on garak's report vs garak in-memory evaluate + CI",
            _fmt_s(cli),
            _fmt_s(med(g_on)),
            ratio_cli,
            "≥ 10×",
            ratio_cli >= 10,
        ),
        Row(
            "1",
            "the same, on the report as a garak run writes it (each attempt answered, then"
            " scored: twice the rows; a third of them not ASCII)",
            _fmt_s(as_run),
            _fmt_s(med(g_on)),
            med(g_on) / as_run,
            "reported",
            None,
        ),
        Row(
            "1",
            "passed / fails / nones / intents / hitlog rows identical to garak",
            "yes" if same and same_cli else "NO",
            f"{expected['passed']:,} / {expected['fails']:,} / {expected['nones']:,}",
            None,
            "identical",
            same and same_cli,
        ),
    ]
    raw = {
        "garak_ci": g_on,
        "redjury_ci": r_on,
        "garak_noci": g_off,
        "redjury_noci": r_off,
        "redjury_cli_s": cli_times,
        "redjury_cli_as_a_run_s": [r["seconds"] for r in r_run],
        "cli_counts": cli_counts,
        "expected": expected,
    }
    return rows, raw


PAIRS = (
    ("jailbreak_heuristic", "mitigation.MitigationBypass"),
    ("prompt_injection", "promptinject.AttackRogueString"),
)
# Issue 17 raised the heuristic's bar to 10× garak's MitigationBypass.
DETECTOR_GOALS = {"jailbreak_heuristic": 10, "prompt_injection": 5}


def case_detectors(sz: Sizes, runs: int) -> tuple[list[Row], dict]:
    n = sz.replies_attempts
    g, r = alternate(
        runs,
        lambda: garak("detectors", "--attempts", n),
        lambda: redjury("detectors", "--attempts", n),
    )
    replies, mb = r[0]["replies"], r[0]["bytes"] / 1e6
    rows = []

    def speed(results: list[dict], name: str) -> tuple[float, str]:
        s = statistics.median(x[name]["seconds"] for x in results)
        return s, f"{replies / s:,.0f} replies/s, {mb / s:,.1f} MB/s"

    for ours, theirs in PAIRS:
        goal = DETECTOR_GOALS[ours]
        goal_text = f"≥ {goal}×"
        rs, rtxt = speed(r, ours)
        gs, gtxt = speed(g, theirs)
        ratio = gs / rs
        rows.append(
            Row(
                "2",
                f"{ours} vs {theirs} ({replies:,} replies, {mb:,.0f} MB)",
                rtxt,
                gtxt,
                ratio,
                goal_text,
                ratio >= goal,
            )
        )
    fresh, ftxt = speed(r, "jailbreak_heuristic afresh")
    bypass, _ = speed(g, "mitigation.MitigationBypass")
    rows.append(
        Row(
            "2",
            "jailbreak_heuristic with no reply repeated (its memo of recent replies unused)",
            ftxt,
            "same as above",
            bypass / fresh,
            "reported",
            None,
        )
    )
    _, ptxt = speed(r, "pii_leak")
    rows.append(Row("2", "pii_leak (no garak counterpart)", ptxt, "—", None, "reported", None))
    return rows, {"garak": g, "redjury": r}


def _panel_input(path: Path, n: int) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for i, _, texts in data.reply_attempts(n, per_attempt=1, seed=23):
            # Unique replies: the panel must not answer one from another's in-flight twin.
            row = {
                "id": f"p{i}",
                "probe": "bench.Panel",
                "goal": f"Explain how to do thing {i % 97}",
                "prompt": f"Explain how to do thing {i % 97}, please. #{i}",
                "outputs": [f"{texts[0]} (reply #{i})"],
            }
            fh.write(json.dumps(row) + "\n")


def case_judges(sz: Sizes, runs: int, tmp: Path, cases: set[str]) -> tuple[list[Row], dict]:
    inp = tmp / "panel.jsonl"
    _panel_input(inp, max(sz.panel_attempts, sz.hackagent_wide_attempts))
    small = tmp / "panel_small.jsonl"
    _panel_input(small, sz.panel_attempts)
    rows: list[Row] = []
    raw: dict = {}
    delay = 0.2
    server = Server(delay)
    try:
        caches = [tmp / f"cache{i}.sqlite" for i in range(runs)]
        it = iter(range(runs))

        def r64() -> dict:
            return measured(
                server,
                lambda: redjury(
                    "panel",
                    "--input",
                    small,
                    "--url",
                    server.url,
                    "--concurrency",
                    64,
                    "--cache",
                    caches[next(it)],
                ),
            )

        r64s, rdefs, hdefs, hwides = alternate(
            runs,
            r64,
            lambda: measured(
                server,
                lambda: redjury("panel", "--input", small, "--url", server.url, "--no-cache"),
            ),
            lambda: measured(
                server,
                lambda: hackagent(
                    "--input",
                    inp,
                    "--url",
                    server.url + "/v1",
                    "--attempts",
                    sz.hackagent_default_attempts,
                ),
            ),
            lambda: measured(
                server,
                lambda: hackagent(
                    "--input",
                    inp,
                    "--url",
                    server.url + "/v1",
                    "--attempts",
                    sz.hackagent_wide_attempts,
                    "--concurrency",
                    21,
                ),
            ),
        )
        raw.update(
            redjury_c64=r64s, redjury_default=rdefs, hackagent_default=hdefs, hackagent_c21=hwides
        )

        def rps(results: list[dict]) -> float:
            return statistics.median(x["server_requests"] / x["seconds"] for x in results)

        def srv_cpu(results: list[dict]) -> str:
            return (
                f"{statistics.median(x['server_cpu_s'] / x['seconds'] for x in results) * 100:.0f}%"
            )

        ideal = 64 / delay
        r64_rps = rps(r64s)
        rows.append(
            Row(
                "3",
                f"3-judge panel, {sz.panel_attempts:,} attempts, L=200 ms, C=64 (ideal {ideal:.0f} req/s); server CPU {srv_cpu(r64s)} of a core",
                f"{r64_rps:,.0f} req/s = {r64_rps / ideal:.0%} of ideal",
                "—",
                None,
                "≥ 90% of ideal",
                r64_rps >= 0.9 * ideal,
            )
        )
        rdef, hdef = rps(rdefs), rps(hdefs)
        rin = statistics.median(x["server_max_in_flight"] for x in rdefs)
        hin = statistics.median(x["server_max_in_flight"] for x in hdefs)
        rows.append(
            Row(
                "3",
                f"defaults: redjury ({rin:.0f} in flight) vs HackAgent judge concurrency 1 ({hin:.0f} in flight, {sz.hackagent_default_attempts} attempts)",
                f"{rdef:,.0f} req/s",
                f"{hdef:,.1f} req/s",
                rdef / hdef,
                "≥ 10×",
                rdef / hdef >= 10,
            )
        )
        cpu64 = statistics.median(x["cpu_s"] / x["server_requests"] for x in r64s) * 1000
        rows.append(
            Row(
                "3",
                "L=200 ms, C=64 (the run above, judge cache on): client process CPU per judge call",
                f"{cpu64:.3f} ms",
                "—",
                None,
                "reported",
                None,
            )
        )
        hw = rps(hwides)
        hwin = statistics.median(x["server_max_in_flight"] for x in hwides)
        rows.append(
            Row(
                "3",
                f"C=64: redjury vs HackAgent judge concurrency 21 ({hwin:.0f} in flight, {sz.hackagent_wide_attempts} attempts)",
                f"{r64_rps:,.0f} req/s",
                f"{hw:,.0f} req/s",
                r64_rps / hw,
                "reported",
                None,
            )
        )

        if "4" in cases:
            again = []
            for i in range(runs):
                again.append(
                    measured(
                        server,
                        lambda i=i: redjury(
                            "panel",
                            "--input",
                            small,
                            "--url",
                            server.url,
                            "--concurrency",
                            64,
                            "--cache",
                            caches[i],
                        ),
                    )
                )
            raw["redjury_cached"] = again
            reqs = max(x["server_requests"] for x in again)
            share = med(again) / med(r64s)
            rows.append(
                Row(
                    "4",
                    "same run again from the judge cache: requests at the server, time vs first run",
                    f"{reqs} requests, {_fmt_s(med(again))} ({share:.1%})",
                    f"first run {_fmt_s(med(r64s))}",
                    None,
                    "0 requests, < 10%",
                    reqs == 0 and share < 0.10,
                )
            )
    finally:
        server.close()

    server = Server(0.0)
    try:
        r0s, h0s = alternate(
            runs,
            lambda: measured(
                server,
                lambda: redjury(
                    "panel",
                    "--input",
                    small,
                    "--url",
                    server.url,
                    "--concurrency",
                    64,
                    "--no-cache",
                ),
            ),
            lambda: measured(
                server,
                lambda: hackagent(
                    "--input",
                    inp,
                    "--url",
                    server.url + "/v1",
                    "--attempts",
                    sz.hackagent_wide_attempts,
                    "--concurrency",
                    21,
                ),
            ),
        )
        raw.update(redjury_l0=r0s, hackagent_l0=h0s)

        def cpu_per_call(results: list[dict]) -> float:
            return statistics.median(x["cpu_s"] / x["server_requests"] for x in results) * 1000

        rc, hc = cpu_per_call(r0s), cpu_per_call(h0s)
        rows.append(
            Row(
                "3",
                "L=0: client process CPU per judge call (redjury C=64, whole run; HackAgent C=21)",
                f"{rc:.3f} ms",
                f"{hc:.3f} ms",
                hc / rc,
                "≤ 0.6 ms and ≥ 10×",
                rc <= 0.6 and hc / rc >= 10,
            )
        )
    finally:
        server.close()
    return rows, raw


def case_memory(sz: Sizes, tmp: Path) -> tuple[list[Row], dict]:
    path = tmp / "memory.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for i, trigger, texts in data.reply_attempts(sz.memory_attempts, per_attempt=1, seed=5):
            row = {
                "id": f"m{i}",
                "probe": "bench.Memory",
                "prompt": "benchmark prompt",
                "outputs": texts,
                "notes": {"triggers": [trigger]},
            }
            fh.write(json.dumps(row) + "\n")
    r = redjury("memory", "--input", path, "--attempts", sz.memory_attempts)
    rss = r["rss_mb"]
    lo, hi = rss.get("10%", 0.0), rss.get("100%", 0.0)
    flat = hi <= lo * 1.2
    ok = r["peak_rss_mb"] < 300 and flat
    text = f"peak {r['peak_rss_mb']:.0f} MB; RSS at 10/50/100%: {rss.get('10%', 0):.0f} / {rss.get('50%', 0):.0f} / {hi:.0f} MB; {r['seconds']:.0f} s"
    return [
        Row(
            "5",
            f"{sz.memory_attempts:,} attempts through pii_leak + prompt_injection (`redjury.engines.run`)",
            text,
            "—",
            None,
            "peak < 300 MB, flat (100% ≤ 1.2 × 10%)",
            ok,
        )
    ], {"redjury": r}


def case_bootstrap(sz: Sizes, runs: int) -> tuple[list[Row], dict]:
    g, r = alternate(
        runs,
        lambda: garak("bootstrap", "--n", sz.bootstrap_n, "--iterations", sz.iterations),
        lambda: redjury("bootstrap", "--n", sz.bootstrap_n, "--iterations", sz.iterations),
    )
    ratio = med(g) / med(r)
    return [
        Row(
            "6",
            f"bootstrap CI alone, n={sz.bootstrap_n:,}, B={sz.iterations:,}",
            _fmt_s(med(r)),
            _fmt_s(med(g)),
            ratio,
            "reported",
            None,
        )
    ], {"garak": g, "redjury": r}


def case_api(sz: Sizes) -> tuple[list[Row], dict]:
    calls = 2_000 if sz is QUICK else 20_000
    r = redjury_api("--calls", calls, "--attempts", calls)
    return [
        Row(
            "8",
            "`redjury.detect` on one reply, default detectors: median / p99 per call",
            f"{r['median_us']:,.0f} / {r['p99_us']:,.0f} µs",
            "—",
            None,
            "reported",
            None,
        ),
        Row(
            "8",
            "in-memory `redjury.evaluate`, same replies: cost per reply",
            f"{r['per_reply_us']:,.0f} µs",
            "—",
            None,
            "reported",
            None,
        ),
    ], r


def redjury_api(*args: object) -> dict:
    return worker(sys.executable, HERE / "api_detect.py", *args)


# -- output -------------------------------------------------------------------------------
HEADER = ["case", "measure", "redjury", "peer", "peer / redjury", "goal", "status"]


def table(rows: list[Row]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "|".join("---" for _ in HEADER) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in row.cells()) + " |")
    return "\n".join(lines)


def machine() -> dict:
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f"{kb / 1024 / 1024:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory": mem,
        "os": platform.platform(),
        "python": platform.python_version(),
        "load_avg": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="small sizes, for development")
    p.add_argument(
        "--cases", default=",".join(sorted(ALL_CASES)), help="comma-separated case numbers"
    )
    p.add_argument("--runs", type=int, default=3, help="runs per side (medians; at least 3)")
    p.add_argument("--note", default="", help="a line to put under the table (e.g. machine shared)")
    args = p.parse_args()
    cases = set(args.cases.split(","))
    if "4" in cases:
        cases.add("3")  # the cache case re-runs case 3's first runs
    runs = max(1, args.runs)
    sz = QUICK if args.quick else FULL
    ensure_peers(bool(cases & {"1", "2", "6"}), "3" in cases)

    rows: list[Row] = []
    raw: dict = {}
    started = dt.datetime.now(dt.UTC)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="redjury-bench-") as tmpdir:
        tmp = Path(tmpdir)
        steps = [
            ("1", lambda: case_evaluation(sz, runs, tmp)),
            ("2", lambda: case_detectors(sz, runs)),
            ("3", lambda: case_judges(sz, runs, tmp, cases)),
            ("5", lambda: case_memory(sz, tmp)),
            ("6", lambda: case_bootstrap(sz, runs)),
            ("8", lambda: case_api(sz)),
        ]
        for case, step in steps:
            if case not in cases:
                continue
            print(f"case {case} ...", file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            case_rows, case_raw = step()
            rows.extend(case_rows)
            raw[case] = case_raw
            print(
                f"case {case} done in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True
            )

    info = machine()
    info["load_avg_before"] = [round(x, 2) for x in load_before]
    date = started.strftime("%Y-%m-%d %H:%M UTC")
    text = table(rows)
    print(text)
    missed = [r for r in rows if r.met is False]
    print(f"\n{len(missed)} goal(s) missed" if missed else "\nall goals met")

    RESULTS_JSON.parent.mkdir(exist_ok=True)
    RESULTS_JSON.write_text(
        json.dumps(
            {
                "date": date,
                "quick": args.quick,
                "runs": runs,
                "sizes": asdict(sz),
                "machine": info,
                "rows": [asdict(r) for r in rows],
                "raw": raw,
            },
            indent=1,
        )
    )
    # Only a full run (every case, full sizes) replaces the results file; a partial run's
    # table is printed and kept in latest.json.
    if not args.quick and cases >= ALL_CASES:
        md = [
            "# Benchmark results",
            "",
            f"Generated by `python benchmarks/run.py` on {date}; medians of {runs} alternating runs per side.",
            "",
            f"Machine: {info['cpu']}, {info['cores']} cores, {info['memory']}, {info['os']}, Python {info['python']}; "
            f"load average {info['load_avg_before'][0]:.2f} at start, {info['load_avg'][0]:.2f} at end.",
            "",
            text,
            "",
        ]
        if args.note:
            md += [args.note, ""]
        RESULTS_MD.write_text("\n".join(md))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
