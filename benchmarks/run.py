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
import contextlib
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
import threading
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

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


FULL = Sizes(20_000, 20_000, 2_000, 100, 600, 10_000_000, 100_000, 10_000)
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
def tree_rss_mb(proc: psutil.Process) -> float:
    """RSS of a process and all its children, in MB (0 for those gone meanwhile)."""
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            total += p.memory_info().rss
    return total / 2**20


def run_sampled(cmd: list[str], env: dict | None = None, timeout: float = 1800) -> dict:
    """Run `cmd` to its end, sampling the RSS of its whole process tree every 20 ms: its
    stdout, stderr, exit status, wall seconds and peak tree RSS (MB)."""
    t0 = time.perf_counter()
    with subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    ) as popen:
        proc, peak = psutil.Process(popen.pid), 0.0
        out: list[str] = []
        reader = threading.Thread(target=lambda: out.extend(popen.communicate(timeout=timeout)))
        reader.start()
        while reader.is_alive():
            with contextlib.suppress(psutil.Error):
                peak = max(peak, tree_rss_mb(proc))
            reader.join(0.02)
    seconds = time.perf_counter() - t0
    stdout, stderr = out if out else ("", "")
    return {
        "stdout": stdout,
        "stderr": stderr,
        "rc": popen.returncode,
        "wall_s": seconds,
        "peak_tree_mb": peak,
    }


def worker(python: Path | str, script: Path, *args: object, timeout: float = 1800) -> dict:
    """Run one worker process; its last stdout line is the JSON result, to which the peak
    RSS of the worker's process tree is added (`peak_tree_mb`, sampled through the run)."""
    env = PEER_ENV if str(python) != sys.executable else dict(os.environ)
    done = run_sampled([str(python), str(script), *map(str, args)], env, timeout)
    if done["rc"] != 0:
        raise RuntimeError(f"{script.name} {args} failed:\n{done['stderr'][-3000:]}")
    result = json.loads(done["stdout"].strip().splitlines()[-1])
    result["peak_tree_mb"] = done["peak_tree_mb"]
    return result


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
def _spread(results: list[dict], key: str = "seconds") -> str:
    """Median (min–max over the runs) and the peak RSS of the process tree."""
    values = [r[key] for r in results]
    peak = max(r.get("peak_tree_mb", 0.0) for r in results)
    low, high = _fmt_s(min(values)), _fmt_s(max(values))
    return f"{_fmt_s(statistics.median(values))} ({low}–{high}); peak tree {peak:,.0f} MB"


def evaluation_rows(sides: dict[str, list[dict]], n: int, iterations: int, full: bool) -> list[Row]:
    """Case 1's table rows from each side's runs (lists of {"seconds", "peak_tree_mb"}):
    what a user calls (the public API, the CLI as a whole process) first, the benchmark's
    internal region after them, named as such. The speed goals hold at full size only: at
    quick sizes a process's start-up is most of a whole run, and the goal rows say so."""
    peer = med(sides["garak_ci"])

    def ratio(side: str, base: float = peer) -> float:
        return base / med(sides[side])

    def goal(value: float, at_least: float) -> tuple[str, bool | None]:
        if not full:
            return f"≥ {at_least:g}× at full size (quick: reported)", None
        return f"≥ {at_least:g}×", value >= at_least

    garak = _spread(sides["garak_ci"])
    vs = f"garak in-memory evaluate + CI, B={iterations:,}"
    cli_none, cli_default = ratio("cli_none"), ratio("cli_default")
    rows = [
        Row("1", f"public `redjury.evaluate()`, `detectors: []` ({n:,} × 5 outputs) vs {vs}",
            _spread(sides["api_none"]), garak, ratio("api_none"), "reported", None),
        Row("1", f"public `redjury.evaluate()`, the four default detectors, vs {vs}",
            _spread(sides["api_default"]), garak, ratio("api_default"), "reported", None),
        Row("1", "whole `redjury run` process on garak's report, `detectors: []`",
            _spread(sides["cli_none"]), garak, cli_none, *goal(cli_none, 10)),
        Row("1", "whole `redjury run` process on garak's report, the four default detectors",
            _spread(sides["cli_default"]), garak, cli_default, *goal(cli_default, 10)),
        Row("1", "the same (default detectors), on the report as a garak run writes it (each"
            " attempt answered, then scored: twice the rows; a third of them not ASCII)",
            _spread(sides["cli_as_run"]), garak, ratio("cli_as_run"), "reported", None),
        Row("1", "internal region, no public API (the pipeline's steps on parsed attempts:"
            " evaluate + CI + write)", _spread(sides["internal_ci"]), garak,
            ratio("internal_ci"), "reported", None),
        Row("1", "internal region, CI off, vs garak's evaluate with CI off",
            _spread(sides["internal_noci"]), _spread(sides["garak_noci"]),
            ratio("internal_noci", med(sides["garak_noci"])), "reported", None),
    ]  # fmt: skip
    return rows


def same_counts(sides: dict[str, list[dict]], expected: dict) -> bool:
    """Every side's passed/fails/nones are garak's; the in-memory sides' intents and hitlog
    rows too."""
    in_memory = ("garak_ci", "internal_ci", "garak_noci", "internal_noci")
    first = sides["garak_ci"][0]
    return all(r["counts"] == expected for runs in sides.values() for r in runs) and all(
        r["intents"] == first["intents"] and r["hitlog_rows"] == first["hitlog_rows"]
        for side in in_memory
        for r in sides[side]
    )


def case_evaluation(sz: Sizes, runs: int, tmp: Path, full: bool) -> tuple[list[Row], dict]:
    n = sz.eval_attempts
    # garak's report file of the same attempts, for the whole `redjury run` process.
    report = tmp / "garak.report.jsonl"
    garak("write-report", "--attempts", n, "--out", report)
    # The same attempts as a garak run writes them: answered rows, then scored rows.
    run_report = tmp / "garak.run.report.jsonl"
    garak("write-report", "--attempts", n, "--out", run_report, "--as-a-run")
    reporting = f"reporting:\n  seed: 42\n  bootstrap_num_iterations: {sz.iterations}\n"
    no_detectors, defaults = tmp / "none.yaml", tmp / "defaults.yaml"
    no_detectors.write_text("detectors: []\n" + reporting)
    defaults.write_text(reporting)
    exe = shutil.which("redjury", path=str(Path(sys.executable).parent)) or "redjury"
    compile_bytecode()
    runs_made = iter(range(10 * runs))

    def whole_run(path: Path, cfg: Path) -> dict:
        # Timed in the same rounds as garak's side, so both see the machine as it is then.
        out = tmp / f"cli{next(runs_made)}"
        cmd = [exe, "run", str(path), "-c", str(cfg), "-o", str(out), "--no-colour"]
        done = run_sampled(cmd, dict(os.environ))
        if done["rc"] != 0:
            raise RuntimeError(f"redjury run failed: {done['stderr'][-2000:]}")
        counts = None
        for line in (out / "redjury.report.jsonl").open(encoding="utf-8"):
            row = json.loads(line)
            if row.get("entry_type") == "eval" and row.get("detector") == data.DETECTOR:
                counts = {k: row[k] for k in ("passed", "fails", "nones")}
        shutil.rmtree(out)
        return {"seconds": done["wall_s"], "counts": counts, "peak_tree_mb": done["peak_tree_mb"]}

    it = sz.iterations
    named = {
        "garak_ci": lambda: garak("evaluate", "--attempts", n, "--ci", "bootstrap", "--iterations", it),
        "api_none": lambda: redjury("api", "--attempts", n, "--iterations", it, "--detectors", "none"),
        "api_default": lambda: redjury("api", "--attempts", n, "--iterations", it, "--detectors", "default"),
        "cli_none": lambda: whole_run(report, no_detectors),
        "cli_default": lambda: whole_run(report, defaults),
        "cli_as_run": lambda: whole_run(run_report, defaults),
        "internal_ci": lambda: redjury("evaluate", "--attempts", n, "--ci", "bootstrap", "--iterations", it),
        "garak_noci": lambda: garak("evaluate", "--attempts", n, "--ci", "none"),
        "internal_noci": lambda: redjury("evaluate", "--attempts", n, "--ci", "none"),
    }  # fmt: skip
    sides = dict(zip(named, alternate(runs, *named.values()), strict=True))
    expected = data.expected_counts(data.scored_attempts(n))
    same = same_counts(sides, expected)
    rows = evaluation_rows(sides, n, it, full)
    rows.append(
        Row(
            "1",
            "passed / fails / nones (every side) and intents / hitlog rows (in memory)"
            " identical to garak",
            "yes" if same else "NO",
            f"{expected['passed']:,} / {expected['fails']:,} / {expected['nones']:,}",
            None,
            "identical",
            same,
        )
    )
    return rows, {**sides, "expected": expected}


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
    """`redjury run` as a user starts it, its whole process tree sampled (memory_tree.py),
    a first run and then a rerun that resumes every attempt."""
    import memory_tree

    r = memory_tree.measure(sz.memory_attempts, None, tmp, resume=True)
    rows = []
    for name in ("first run", "resume (all judged)"):
        m = r[name]
        at = m["rss_mb"]
        marks = " / ".join("—" if at[k] is None else f"{at[k]:.0f}" for k in at)
        text = (
            f"peak {m['peak_rss_mb']:.0f} MB; RSS at 10/50/100%: {marks} MB; {m['seconds']:.0f} s"
        )
        # The id store's fixed part (filter, page cache) comes at its first spill (65,536
        # ids): flatness is a goal from a million attempts on, reported below that.
        met = m["flat"] if sz.memory_attempts >= 1_000_000 else None
        rows.append(
            Row(
                "5",
                f"{sz.memory_attempts:,} attempts, {name}: `redjury run` (pii_leak +"
                " prompt_injection), RSS of all its processes",
                text + ("" if m["flat"] else f" ({m['why']})"),
                "—",
                None,
                "flat (highest mark ≤ 1.2 × lowest)",
                met,
            )
        )
    return rows, {"redjury": r}


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


def outcome(rows: list[Row]) -> tuple[str, int]:
    """The run's last line and exit status: 1 when any goal is missed."""
    missed = [r for r in rows if r.met is False]
    if missed:
        return f"{len(missed)} goal(s) missed: " + "; ".join(r.measure for r in missed), 1
    unchecked = sum(r.met is None and r.goal != "reported" for r in rows)
    note = f" ({unchecked} goal(s) not checked at these sizes)" if unchecked else ""
    return "all goals met" + note, 0


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
            ("1", lambda: case_evaluation(sz, runs, tmp, not args.quick)),
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
    line, code = outcome(rows)
    print(f"\n{line}")

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
    # A run at full sizes replaces the results file, naming the cases it ran; a quick run's
    # table is printed and kept in latest.json.
    if not args.quick:
        left = sorted(ALL_CASES - cases)
        md = [
            "# Benchmark results",
            "",
            f"Generated by `python benchmarks/run.py --cases {','.join(sorted(cases & ALL_CASES))}` "
            f"on {date}; medians of {runs} alternating runs per side"
            + (f"; cases not in this run: {', '.join(left)}." if left else "."),
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
    return code


if __name__ == "__main__":
    sys.exit(main())
