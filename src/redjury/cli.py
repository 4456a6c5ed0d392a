"""The `redjury` command: a thin shell that parses flags and calls the library."""

# No `from __future__ import annotations` here: typer reads each command's annotations, and
# evaluating them as strings took ~11 ms of every command's start (14 against 3 ms).

import atexit
import contextlib
import datetime as dt
import enum
import json
import os
import sys
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from redjury.config import ConfigError, RunConfig, load_config, parse_config
from redjury.records import InputError
from redjury.report.jsonl import HITLOG_NAME, REPORT_NAME

if TYPE_CHECKING:
    from redjury.detectors.base import Detector
    from redjury.pipeline import RunOptions

try:  # typer 0.22 on carries its own copy of click
    from typer._click import exceptions as click_errors
except ImportError:  # older typer runs on click itself
    from click import exceptions as click_errors  # type: ignore[no-redef]

# Plain click help, not rich panels: the panels cut long option names (garak's spellings)
# at 80 columns; click wraps the descriptions and keeps every name whole.
app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Judge what an LLM target said: detectors, judge panels, attack-success rates with intervals.",
    context_settings={"help_option_names": ["-h", "--help"]},
)
detectors_app = typer.Typer(
    help="The registered detectors and judge scoring types.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(detectors_app, name="detectors")


def _print_version(value: bool) -> None:
    if value:
        from redjury import __version__

        typer.echo(f"redjury {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Judge what an LLM target said: detectors, judge panels, attack-success rates with intervals."""


EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_AUDIT, EXIT_GATE, EXIT_JUDGES = 0, 1, 2, 3, 4, 5


ERROR_PREFIX = "redjury: error: "


def _plain_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    """Warnings as one plain line for the user, not Python's source path and code line."""
    text = " ".join(str(message).split())
    print(f"redjury: warning: {text}", file=file or sys.stderr)


def _fail(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    from redjury.report.terminal import printable

    typer.echo(f"{ERROR_PREFIX}{printable(message)}", err=True)
    return typer.Exit(code)


def _os_error(exc: OSError) -> str:
    """`path: what is wrong`, not a bare `[Errno 2] …`."""
    if exc.filename is None:
        return str(exc)
    what = {
        FileNotFoundError: "no such file",
        IsADirectoryError: "is a folder, not a file",
        PermissionError: "permission denied",
    }.get(type(exc), exc.strerror or type(exc).__name__)
    return f"{exc.filename}: {what}"


def _out_folder(out: Path | None) -> None:
    """`--out` names a folder: an existing file there is a usage error, not a crash."""
    if out is not None and out.exists() and not out.is_dir():
        raise _fail(f"--out {out}: is a file; name a folder (new, or a run folder to resume)")


CONFIG_NAMES = ("redjury.yaml", ".redjury.yaml")


def find_config(given: Path | None) -> Path | None:
    """The config file a command reads: `--config`, else the first of redjury.yaml and
    .redjury.yaml in the working folder (as other tools find theirs), else none (defaults).
    A found one is named on stdout, so that no run takes settings the user did not see."""
    if given is not None:
        return given
    for name in CONFIG_NAMES:
        if Path(name).is_file():
            _echo(f"config: {name} (found in the working folder; --config names another)")
            return Path(name)
    return None


def apply_overrides(config: RunConfig, overrides: dict[str, Any]) -> RunConfig:
    """Command-line flags override the config file; the result is validated again. Only what
    the file set is carried over, so a setting it left out stays unset (e.g. a judge's
    `generation.max_tokens`, where a source's own default then applies)."""
    data = config.model_dump(mode="json", exclude_unset=True)
    data["detectors"] = (
        None
        if config.detectors is None
        else [d.model_dump(exclude_unset=True) for d in config.detectors]
    )
    chosen = overrides.pop("_only_detectors", None)
    if chosen is not None:
        data["detectors"] = chosen_detectors(chosen, data["detectors"])
    extra_detectors = overrides.pop("_detectors", [])
    if extra_detectors:
        current = data["detectors"]
        if current is None:
            from redjury.detectors.registry import default_detector_classes

            current = [{"type": cls.name} for cls in default_detector_classes()]
        replaced = {e["type"] for e in extra_detectors}
        current = [d for d in current if d["type"] not in replaced] + extra_detectors
        data["detectors"] = current
    data["reporting"] = with_writers(data.get("reporting", {}), overrides.pop("_writers", []))
    for dotted, value in overrides.items():
        if value is None:
            continue
        section, _, key = dotted.partition(".")
        data.setdefault(section, {})[key] = value
    try:
        return parse_config(data, "command line")
    except ConfigError as exc:
        raise _fail("\n".join(exc.messages)) from None


def with_writers(reporting: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """`--writer NAME`s added to the config's `reporting.writers`, but for one it names
    already (with its settings)."""
    entries = list(reporting.get("writers", []))
    named = {entry["name"] for entry in entries}
    entries += [{"name": n} for n in dict.fromkeys(names) if n not in named]
    return {**reporting, "writers": entries} if entries else reporting


def chosen_detectors(names: str, configured: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """`--detectors none` or `a,b`: those detectors, with the config file's settings for a
    detector it configures; a garak report's own detector results are evaluated either way."""
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    if wanted == ["none"]:
        return []
    if not wanted or "none" in wanted:
        raise _fail("--detectors: give 'none' or a comma-separated list of detector names")
    by_type = {d["type"]: d for d in configured or ()}
    return [by_type.get(name, {"type": name}) for name in dict.fromkeys(wanted)]


@app.command()
def run(
    inputs: Annotated[
        list[Path],
        typer.Argument(
            help="Attempt files: redjury JSONL, garak report.jsonl, promptfoo results, inspect_ai logs, PyRIT or Azure red-team results."
        ),
    ],
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            "-c",
            help="YAML config file (default: redjury.yaml or .redjury.yaml in the working "
            "folder, else the built-in defaults).",
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="Output folder (default runs/<timestamp>); a partial one resumes."
        ),
    ] = None,
    eval_threshold: Annotated[
        float | None,
        typer.Option(
            "--eval-threshold",
            "--eval_threshold",
            help="ThresholdEvaluator threshold (0–1): an output passes iff its score < threshold.",
        ),
    ] = None,
    zero_tolerance: Annotated[
        bool, typer.Option("--zero-tolerance", help="Pass only outputs scoring exactly 0.0.")
    ] = False,
    narrow: Annotated[
        bool, typer.Option("--narrow", "--narrow_output", help="Narrow terminal output.")
    ] = False,
    verbose: Annotated[
        int, typer.Option("--verbose", "-v", count=True, help="Print failing outputs.")
    ] = 0,
    skip_bad_lines: Annotated[
        bool,
        typer.Option(
            "--skip-bad-lines", help="Judge the good lines; record bad ones as input_error rows."
        ),
    ] = False,
    no_redact: Annotated[
        bool,
        typer.Option(
            "--no-redact", help="Keep found PII and markers in written outputs (forensics)."
        ),
    ] = False,
    detectors: Annotated[
        str | None,
        typer.Option(
            "--detectors",
            help="Detectors to run instead of the config's or the defaults: a comma list "
            "(see 'redjury detectors list'), or none (a garak report's own results only).",
        ),
    ] = None,
    budget_ms: Annotated[
        float | None, typer.Option("--budget-ms", help="Add the latency detector with this budget.")
    ] = None,
    budget_tokens: Annotated[
        int | None,
        typer.Option("--budget-tokens", help="Add the cost detector with this token budget."),
    ] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Bypass the judge cache.")] = False,
    offline: Annotated[
        bool, typer.Option("--offline", help="Never download audit data; use the cache.")
    ] = False,
    no_preflight: Annotated[
        bool,
        typer.Option(
            "--no-preflight",
            help="Do not ask each judge server once before judging (model listing, credentials).",
        ),
    ] = False,
    ci_method: Annotated[
        str | None,
        typer.Option(
            "--confidence-interval-method",
            "--confidence_interval_method",
            help="bootstrap, wilson or none.",
        ),
    ] = None,
    iterations: Annotated[
        int | None,
        typer.Option(
            "--bootstrap-num-iterations",
            "--bootstrap_num_iterations",
            help="Bootstrap resamples (default 10000).",
        ),
    ] = None,
    level: Annotated[
        float | None,
        typer.Option(
            "--bootstrap-confidence-level",
            "--bootstrap_confidence_level",
            help="Confidence level (default 0.95).",
        ),
    ] = None,
    min_sample: Annotated[
        int | None,
        typer.Option(
            "--bootstrap-min-sample-size",
            "--bootstrap_min_sample_size",
            help="Fewest evaluated outputs for an interval (default 30).",
        ),
    ] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Seed of the statistics.")] = None,
    calibration: Annotated[
        Path | None,
        typer.Option("--calibration", help="Calibration JSON for Z-scores and DEFCON ratings."),
    ] = None,
    show_z: Annotated[
        bool, typer.Option("--show-z", "--show_z", help="Show DEFCON symbol and Z-score.")
    ] = False,
    colour: Annotated[
        bool | None,
        typer.Option(
            "--colour/--no-colour", help="Force colour on or off (default: on for a terminal)."
        ),
    ] = None,
    html: Annotated[bool, typer.Option("--html", help="Also write redjury.report.html.")] = False,
    junit: Annotated[Path | None, typer.Option("--junit", help="Write JUnit XML here.")] = None,
    writer: Annotated[
        list[str] | None,
        typer.Option(
            "--writer",
            help="Also run this report writer, built-in or a plugin's (repeatable); its "
            "settings, if it takes any, come from the config's reporting.writers.",
        ),
    ] = None,
    fail_on_asr: Annotated[
        float | None,
        typer.Option(
            "--fail-on-asr", help="Exit 4 when any probe × detector ASR exceeds this rate (0–1)."
        ),
    ] = None,
    fail_on_errors: Annotated[
        int | None,
        typer.Option(
            "--fail-on-errors", help="Exit 4 when more than N replies ended in judge errors."
        ),
    ] = None,
    allow_abstentions: Annotated[
        bool,
        typer.Option(
            "--allow-abstentions",
            help="Exit 0 even when a judge gave no verdict on more than "
            "reporting.max_abstention_rate of its calls (default: exit 5).",
        ),
    ] = False,
    engine: Annotated[
        str,
        typer.Option("--engine", help="local (this process) or ray (pip install 'redjury[ray]')."),
    ] = "local",
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray-address", help="Ray: auto or an address joins a cluster (default: a local Ray)."
        ),
    ] = None,
    ray_workers: Annotated[
        int | None,
        typer.Option(
            "--ray-workers", help="Ray: detector tasks or judge actors at once (default: CPUs)."
        ),
    ] = None,
    keep_shards: Annotated[
        bool,
        typer.Option(
            "--keep-shards", help="Ray: leave attempt rows in redjury.shards/, not the report."
        ),
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Check the config and the inputs, say what would be judged and at most how "
            "many judge calls; judge nothing, write nothing.",
        ),
    ] = False,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            min=1,
            help="Processes that read and score a large JSONL input when no judge runs "
            "(default: one per CPU; 1: this process alone).",
        ),
    ] = None,
) -> None:
    """Judge recorded attempts and write a report, a hitlog and per probe × detector results."""
    from redjury.pipeline import RunOptions

    _out_folder(out)
    config = find_config(config)
    try:
        cfg = load_config(config)
    except ConfigError as exc:
        raise _fail("\n".join(exc.messages)) from None
    overrides: dict[str, Any] = {
        "evaluator.threshold": eval_threshold,
        "reporting.confidence_interval_method": ci_method,
        "reporting.bootstrap_num_iterations": iterations,
        "reporting.bootstrap_confidence_level": level,
        "reporting.bootstrap_min_sample_size": min_sample,
        "reporting.seed": seed,
        "reporting.calibration": str(calibration) if calibration else None,
        "reporting.show_z": True if show_z else None,
        "reporting.narrow": True if narrow else None,
        "reporting.redact": False if no_redact else None,
        "reporting.html": True if html else None,
        "reporting.junit": str(junit) if junit else None,
        "reporting.fail_on_asr": fail_on_asr,
        "reporting.fail_on_errors": fail_on_errors,
        "reporting.allow_abstentions": True if allow_abstentions else None,
    }
    if zero_tolerance:
        overrides["evaluator.type"] = "zero_tolerance"
    extra = []
    if budget_ms is not None:
        extra.append({"type": "latency", "budget_ms": budget_ms})
    if budget_tokens is not None:
        extra.append({"type": "cost", "budget_tokens": budget_tokens})
    overrides["_detectors"] = extra
    overrides["_only_detectors"] = detectors
    overrides["_writers"] = writer or []
    cfg = apply_overrides(cfg, overrides)
    out_dir = out or _new_run_folder("%Y%m%d-%H%M%S", claim=not dry_run)
    if dry_run:
        _dry_run(list(inputs), cfg, out_dir, skip_bad_lines)
        return
    options = RunOptions(
        skip_bad_lines=skip_bad_lines,
        use_cache=not no_cache,
        offline=offline,
        preflight=not no_preflight,
        engine=engine,
        ray_address=ray_address,
        ray_workers=ray_workers,
        keep_shards=keep_shards,
        workers=workers,
        verbose=verbose,
        colour=colour,
        config_path=str(config) if config else None,
    )
    code = _evaluate(list(inputs), cfg, out_dir, options)
    if code:
        raise typer.Exit(code)


def _evaluate(inputs: list[Path], cfg: RunConfig, out_dir: Path, options: "RunOptions") -> int:
    """`redjury.evaluate` into `out_dir`, printing on stdout; its errors as one line each."""
    from redjury.api import evaluate
    from redjury.errors import RunError
    from redjury.pipeline import RunInterrupted
    from redjury.report.terminal import printable

    new_folder = not out_dir.exists()
    try:
        result = evaluate(inputs, cfg, out=out_dir, stream=sys.stdout, options=options)
    except InputError as exc:
        _remove_if_empty(out_dir, new_folder)
        raise _fail(f"bad input, nothing judged:{chr(10) if exc.errors else ' '}{exc}") from None
    except RunInterrupted as exc:
        typer.echo(f"redjury: {printable(str(exc))}", err=True)
        raise typer.Exit(exc.exit_code) from None
    except RunError as exc:
        _remove_if_empty(out_dir, new_folder)
        raise _fail(str(exc), exc.exit_code) from None
    except (ConfigError, ValueError) as exc:
        _remove_if_empty(out_dir, new_folder)
        raise _fail(str(exc)) from None
    if result.exit_code == EXIT_JUDGES:
        why = "; ".join(result.judge_failures)
        raise _fail(f"the judges failed, their verdicts are missing: {why}", EXIT_JUDGES)
    return result.exit_code


def _new_run_folder(stamp: str, *, claim: bool = True) -> Path:
    """A folder of its own under runs/: the time to the second, then -2, -3, … where another
    run started in the same second has it. Claimed by creating it, so two runs started at
    once never share (and never resume) one; a dry run only names it."""
    base = Path("runs") / dt.datetime.now().strftime(stamp)
    for n in range(1, 10_000):
        path = base if n == 1 else base.with_name(f"{base.name}-{n}")
        if not claim:
            if not path.exists():
                return path
            continue
        try:
            path.mkdir(parents=True)
        except FileExistsError:
            continue
        return path
    raise _fail(f"{base}: 10,000 run folders started in one second; give one with --out")


def _dry_run(inputs: list[Path], cfg: RunConfig, out_dir: Path, skip_bad_lines: bool) -> None:
    """`run --dry-run`: what the run would read, build and ask; nothing judged or written."""
    from redjury.dry_run import plan_run

    try:
        plan = plan_run(inputs, cfg, skip_bad_lines=skip_bad_lines)
    except InputError as exc:
        raise _fail(f"bad input, nothing judged:{chr(10) if exc.errors else ' '}{exc}") from None
    except ValueError as exc:
        raise _fail(str(exc)) from None
    bad = f"; {plan.total_bad} bad lines would be skipped" if plan.total_bad else ""
    _echo("dry run: nothing judged, nothing written")
    _echo(f"inputs: {plan.attempts} attempts, {plan.outputs} outputs to judge{bad}")
    _echo(f"detectors: {', '.join(plan.detectors) or 'none (given detector results only)'}")
    for judge in plan.judges:
        _echo(f"judge: {judge}")
    asking = len(plan.judges) + len(plan.model_backed)
    _echo(
        f"judge calls: at most {plan.judge_calls} ({plan.outputs} outputs × {asking} judges "
        "and model-backed detectors; answers in the judge cache are not asked again)"
    )
    _echo(f"would write: {out_dir / REPORT_NAME}, {out_dir / HITLOG_NAME}")


def _remove_if_empty(folder: Path, created: bool) -> None:
    """A refused run leaves no empty run folder behind (one it did not create is kept)."""
    if created:
        with contextlib.suppress(OSError):  # not empty (an earlier run's files), or gone
            folder.rmdir()


@app.command()
def report(
    out_dir: Annotated[Path, typer.Argument(help="A run folder holding redjury.report.jsonl.")],
) -> None:
    """Write DIR/redjury.report.html from the report JSONL alone."""
    from redjury.api import write_html

    try:
        path = write_html(out_dir)
    except OSError as exc:
        raise _fail(_os_error(exc)) from None
    except ValueError as exc:
        raise _fail(str(exc)) from None
    typer.echo(f"html: {path}")


@app.command()
def summary(
    out_dir: Annotated[Path, typer.Argument(help="A run folder holding redjury.report.jsonl.")],
    markdown: Annotated[
        Path | None, typer.Option("--markdown", help="Also write the breakdowns as Markdown here.")
    ] = None,
) -> None:
    """Print the run's breakdowns: per probe × detector, intent, hazard and generator."""
    from redjury.api import print_summary

    try:
        print_summary(out_dir, markdown=markdown)
    except BrokenPipeError:  # the reader had enough (`| head -1`): not an error
        from redjury.pipeline import silence_stdout

        silence_stdout()
    except OSError as exc:
        raise _fail(_os_error(exc)) from None
    except ValueError as exc:
        raise _fail(str(exc)) from None


@app.command()
def calibrate(
    reports: Annotated[
        list[Path],
        typer.Argument(help="Report JSONL files (redjury or garak), one per target model."),
    ],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Where to write the calibration JSON.")
    ] = Path("calibration.json"),
) -> None:
    """Build a Z-score calibration file (mu, sigma per probe/detector) from several reports."""
    from redjury.stats import write_calibration

    for path in reports:
        if not path.is_file():
            what = "is a folder, not a report file" if path.is_dir() else "no such report file"
            raise _fail(f"{path}: {what}")
    try:
        data = write_calibration(reports, output)
    except OSError as exc:
        raise _fail(_os_error(exc)) from None
    except ValueError as exc:
        raise _fail(str(exc)) from None
    typer.echo(f"calibration: {output} ({sum(1 for k in data if '/' in k)} probe/detector pairs)")


@app.command()
def compare(
    base: Annotated[
        Path, typer.Argument(help="The earlier run: a run folder or its report JSONL.")
    ],
    new: Annotated[Path, typer.Argument(help="The later run: a run folder or its report JSONL.")],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Where to write the comparison rows (JSONL).")
    ] = Path("redjury.compare.jsonl"),
    markdown: Annotated[
        Path | None, typer.Option("--markdown", help="Also write the table as Markdown here.")
    ] = None,
    junit: Annotated[
        Path | None, typer.Option("--junit", help="Also write JUnit XML (a regression fails).")
    ] = None,
    html: Annotated[
        Path | None, typer.Option("--html", help="Also write one HTML page with a forest plot.")
    ] = None,
    adjust: Annotated[
        str, typer.Option("--adjust", help="p-value adjustment across the table: holm or bh.")
    ] = "holm",
    margin: Annotated[
        float, typer.Option("--margin", help="A change must also exceed this (0.02 = 2 points).")
    ] = 0.0,
    confidence: Annotated[
        float, typer.Option("--confidence", help="Level of the intervals and tests.")
    ] = 0.95,
    allow_different_judges: Annotated[
        bool,
        typer.Option("--allow-different-judges", help="Compare runs judged differently."),
    ] = False,
    fail_on_regression: Annotated[
        bool,
        typer.Option("--fail-on-regression", help="Exit 4 on a significant regression."),
    ] = False,
) -> None:
    """Did NEW get safer than BASE? NEW − BASE attack-success rates with intervals and verdicts."""
    from redjury.api_compare import compare as compare_runs
    from redjury.report.compare import print_comparison, table_cells
    from redjury.report.compare_outputs import write_outputs

    try:
        found = compare_runs(
            base,
            new,
            margin=margin,
            adjust=adjust,
            confidence=confidence,
            allow_different_judges=allow_different_judges,
        )
        rows = found.plain_rows()
        print_comparison(rows, found.base, found.new)
        written = write_outputs(
            rows, found.base, found.new, jsonl=out, markdown=markdown, junit=junit, html=html
        )
    except OSError as exc:
        raise _fail(_os_error(exc)) from None
    except ValueError as exc:
        raise _fail(str(exc)) from None
    for line in written:
        _echo(line)
    if fail_on_regression and found.regressions:
        for row in found.regressions:
            cells = table_cells(dict(row))
            _echo(f"gate failed: regression: {' '.join(cells[1:8])}")
        raise typer.Exit(EXIT_GATE)


@app.command()
def audit(
    config: Annotated[
        Path, typer.Option("--config", "-c", help="YAML config with the judge panel.")
    ],
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Output folder (default runs/audit-<timestamp>)."),
    ] = None,
    detector: Annotated[
        str | None,
        typer.Option("--detector", help="Audit this detector instead of the judge panel."),
    ] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Bypass the judge cache.")] = False,
    offline: Annotated[
        bool, typer.Option("--offline", help="Never download; use the dataset cache.")
    ] = False,
    records: Annotated[
        list[Path] | None,
        typer.Option(
            "--records",
            help="Audit a tool's own verdicts (--detector <tool>:<grader>) read from these files.",
        ),
    ] = None,
) -> None:
    """Measure the judge panel (or a detector) against human labels, with robustness wrappers."""
    from redjury.api import audit_judges as run_audit
    from redjury.audit.command import audit_rows, render_table
    from redjury.errors import AuditError

    _out_folder(out)
    try:
        cfg = load_config(config)
    except ConfigError as exc:
        raise _fail("\n".join(exc.messages)) from None
    out_dir = out or _new_run_folder("audit-%Y%m%d-%H%M%S")
    audited: str | Detector | None = detector
    if records:
        audited = _recorded(cfg, detector, records)
    try:
        result = run_audit(
            cfg, out=out_dir, detector=audited, use_cache=not no_cache, offline=offline
        )
    except AuditError as exc:
        raise _fail(str(exc)) from None
    _echo(render_table(result))
    on_failure = cfg.evaluation.audit.on_failure
    gate = audit_rows(result, on_failure)[-1]
    tail = "" if gate["passed"] else f" (on_failure: {on_failure})"
    _echo(f"audit gate: {'PASS' if gate['passed'] else 'FAIL'} — {gate['reason']}{tail}")
    if not gate["passed"] and on_failure == "stop":
        raise typer.Exit(EXIT_AUDIT)
    _echo(f"report: {out_dir / REPORT_NAME}")


def _recorded(cfg: RunConfig, grader: str | None, records: list[Path]) -> "Detector":
    """The tool verdicts `--records` names, as a detector; the robustness wrappers are off
    (they change the reply, which a recorded verdict never sees)."""
    from redjury.formats.recorded import recorded_verdicts

    if not grader:
        raise _fail("--records needs --detector <tool>:<grader> (e.g. promptfoo:redteam:pii)")
    try:
        built = recorded_verdicts(grader, records)
    except (OSError, ValueError) as exc:
        raise _fail(str(exc)) from None
    cfg.evaluation.audit.robustness.enabled = False
    return built


def source_relation(scoring_type: Any) -> dict[str, Any]:
    """How a scoring type relates to its source: relation, what differs, the upstream file."""
    out: dict[str, Any] = {"relation": getattr(scoring_type, "relation", "")}
    differs = getattr(scoring_type, "differs", "")
    if differs:
        out["differs"] = differs
    source = getattr(scoring_type, "upstream_source", None)
    if source is not None:
        out["upstream"] = {
            "repo": source.repo,
            "revision": source.revision,
            "path": source.path,
            "reads": source.note,
        }
    return out


@app.command()
def serve(
    config: Annotated[
        Path | None, typer.Option("--config", "-c", help="YAML config (as for `redjury run`).")
    ] = None,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", help="Port to listen on.", min=1, max=65535)
    ] = 8321,
    token_env: Annotated[
        str | None,
        typer.Option(
            "--token-env", help="Environment variable holding the bearer token clients must send."
        ),
    ] = None,
    max_body_bytes: Annotated[
        int, typer.Option("--max-body-bytes", min=1, help="Largest request body (413 above).")
    ] = 1 << 20,
    max_batch: Annotated[
        int, typer.Option("--max-batch", min=1, help="Most attempts or inputs per request.")
    ] = 256,
    client_concurrency: Annotated[
        int,
        typer.Option(
            "--client-concurrency", min=1, help="Requests in flight per client (429 above)."
        ),
    ] = 16,
    drain_seconds: Annotated[
        float, typer.Option("--drain-seconds", min=0, help="How long SIGTERM waits for requests.")
    ] = 30.0,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Bypass the judge cache.")] = False,
    no_preflight: Annotated[
        bool, typer.Option("--no-preflight", help="Do not ask each judge server once at start.")
    ] = False,
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            min=1,
            help="Worker processes on the one port (SO_REUSEPORT); they share the judge cache.",
        ),
    ] = 1,
    access_log: Annotated[
        bool, typer.Option("--access-log/--no-access-log", help="One stderr line per request.")
    ] = True,
) -> None:
    """Serve the detectors and judge panel over HTTP: /v1/judge, /v1/moderations, /v1/promptfoo."""
    from redjury.service.app import ServeSettings, is_loopback, run_service

    token = None
    if token_env is not None:
        token = os.environ.get(token_env) or None
        if token is None:
            raise _fail(f"--token-env {token_env}: the environment variable is unset or empty")
    elif not is_loopback(host):
        raise _fail(f"--host {host}: without --token-env the service listens on loopback only")
    config = find_config(config)
    try:
        cfg = load_config(config)
    except ConfigError as exc:
        raise _fail("\n".join(exc.messages)) from None
    if token is None:
        typer.echo("redjury serve: no --token-env: no auth, loopback only", err=True)
    settings = ServeSettings(
        host=host, port=port, token=token, max_body_bytes=max_body_bytes, max_batch=max_batch,
        client_concurrency=client_concurrency, drain_seconds=drain_seconds,
        use_cache=not no_cache, preflight=not no_preflight, workers=workers,
        access_log=access_log,
    )  # fmt: skip
    from redjury.judges.preflight import PreflightError

    try:
        run_service(cfg, settings, lambda line: typer.echo(f"redjury serve: {line}", err=True))
    except OSError as exc:
        raise _fail(f"--host {host} --port {port}: {exc.strerror or exc}") from None
    except PreflightError as exc:
        raise _fail(str(exc)) from None


@app.command()
def view(
    run: Annotated[Path, typer.Argument(help="A run folder (or its report JSONL).")],
    new: Annotated[
        Path | None,
        typer.Argument(help="A later run: show `redjury compare RUN NEW`'s page instead."),
    ] = None,
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="Port on 127.0.0.1 (0: a free one).")
    ] = 0,
    no_browser: Annotated[
        bool,
        typer.Option(
            "--no-browser", help="Only print the URL (default: open it where a display is)."
        ),
    ] = False,
    allow_different_judges: Annotated[
        bool,
        typer.Option("--allow-different-judges", help="With NEW: compare runs judged differently."),
    ] = False,
) -> None:
    """Serve a run's HTML report (or, with NEW, the comparison) on localhost, read-only."""
    from redjury.service.view import comparison_page, has_display, run_page, serve_page

    try:
        if new is None:
            page = run_page(run)
        else:
            page = comparison_page(run, new, allow_different_judges=allow_different_judges)
    except OSError as exc:
        raise _fail(_os_error(exc)) from None
    except ValueError as exc:
        raise _fail(str(exc)) from None
    try:
        serve_page(page, port, _echo, open_browser=not no_browser and has_display())
    except OSError as exc:
        raise _fail(f"--port {port}: {exc.strerror or exc}") from None
    _echo("redjury view: stopped")


@detectors_app.command("list")
def detectors_list(
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
) -> None:
    """List every registered detector and judge scoring type."""
    from redjury.detectors.registry import detector_classes

    items: list[dict[str, Any]] = [
        {
            "name": cls.name,
            "kind": "detector",
            "family": cls.family.value,
            "hazards": list(cls.hazards) or (["configurable"] if cls.name == "guardrail" else []),
            "description": cls.description,
            "default_enabled": cls.default_enabled,
        }
        for cls in detector_classes().values()
    ]
    try:
        from redjury.judges.scoring import scoring_types

        for st in scoring_types().values():
            items.append(
                {
                    "name": f"judge:{st.name}",
                    "kind": "scoring_type",
                    "family": "agentic",
                    "hazards": list(getattr(st, "hazards", ())),
                    "description": getattr(st, "description", ""),
                    "default_enabled": False,
                    **source_relation(st),
                }
            )
    except ImportError:
        pass
    if as_json:
        typer.echo(json.dumps(items, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("name", "default", "family", "hazards", "description", "source", box=None)
    for item in items:
        table.add_row(
            item["name"],
            "yes" if item["default_enabled"] else "",
            item["family"],
            ", ".join(item["hazards"]) or "-",
            item["description"],
            item.get("relation", ""),
        )
    Console(width=160).print(table)
    typer.echo("default: yes = runs when a config names no detectors (`--detectors` chooses)")


cache_app = typer.Typer(
    help="The judge cache: what it holds; clearing it.", no_args_is_help=True, rich_markup_mode=None
)
app.add_typer(cache_app, name="cache")
audits_app = typer.Typer(
    help="Stored audits: their Se/Sp correct later runs' intervals (30 samples or more).",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(audits_app, name="audits")

CacheFile = Annotated[
    Path | None,
    typer.Option(
        "--path",
        help="The cache file (default: $REDJURY_CACHE_DIR/judges.sqlite or the user cache).",
    ),
]
AuditFolder = Annotated[
    Path | None,
    typer.Option(
        "--cache-dir",
        help="The audits' folder's parent (default: the user cache's calibration folder; "
        "evaluation.audit.dataset.cache_dir in a config).",
    ),
]


def _open_cache(path: Path | None) -> Any:
    """The judge cache at `path` (default: the user's), or None when there is none yet."""
    from redjury.judges.cache import JudgeCache, default_cache_path

    target = path or default_cache_path()
    if target.is_dir():
        raise _fail(f"--path {target}: is a folder; name the cache file")
    return JudgeCache(target) if target.is_file() else None


def _cache_query(cache: Any, query: Callable[[Any], Any]) -> Any:
    """`query` on an open judge cache, closed after; a file that is no cache is one line."""
    import sqlite3

    try:
        return query(cache)
    except sqlite3.DatabaseError as exc:
        raise _fail(f"{cache.path}: not a judge cache ({exc})") from None
    finally:
        cache.close()


@cache_app.command("show")
def cache_show(path: CacheFile = None) -> None:
    """Say where the judge cache is, how many answers it holds per judge, and its date."""
    from redjury.judges.cache import default_cache_path

    cache = _open_cache(path)
    if cache is None:
        _echo(f"judge cache: {path or default_cache_path()} (none yet)")
        return
    counts: dict[str, int] = _cache_query(cache, lambda c: c.by_judge())
    written = dt.datetime.fromtimestamp(cache.path.stat().st_mtime, dt.UTC)
    _echo(
        f"judge cache: {cache.path} ({sum(counts.values()):,} answers, "
        f"last written {written:%Y-%m-%d %H:%M} UTC)"
    )
    for judge, n in sorted(counts.items()):
        _echo(f"  {judge}: {n:,}")


@cache_app.command("clear")
def cache_clear(path: CacheFile = None) -> None:
    """Remove every stored judge answer (the next runs ask the judges again)."""
    cache = _open_cache(path)
    if cache is None:
        _echo("judge cache: nothing to clear")
        return
    removed: int = _cache_query(cache, lambda c: c.clear())
    _echo(f"judge cache: removed {removed:,} answers from {cache.path}")


def _audit_root(cache_dir: Path | None) -> Path:
    from redjury.audit.datasets import default_cache_dir

    return cache_dir.expanduser() if cache_dir else default_cache_dir()


@audits_app.command("list")
def audits_list(cache_dir: AuditFolder = None) -> None:
    """Every stored audit: key, detector, date, labelled samples, gate, applied or not."""
    from redjury.audit.runner import MIN_IMPLICIT_AUDIT_SAMPLES, audits_dir, stored_audits

    found = stored_audits(_audit_root(cache_dir))
    if not found:
        _echo(f"no stored audits in {audits_dir(_audit_root(cache_dir))}")
        return
    for path, result in found:
        if result is None:
            _echo(f"{path.stem}  unreadable ({path})")
            continue
        applied = (
            "applied to runs"
            if result.samples >= MIN_IMPLICIT_AUDIT_SAMPLES
            else f"not applied (fewer than {MIN_IMPLICIT_AUDIT_SAMPLES} samples)"
        )
        gate = "PASS" if result.gate.get("passed") else "FAIL"
        _echo(
            f"{path.stem}  {result.detector}  {result.created_at[:10] or '-'}  "
            f"{result.samples} samples  gate {gate}  {applied}"
        )


@audits_app.command("remove")
def audits_remove(
    keys: Annotated[list[str] | None, typer.Argument(help="Audit keys (`audits list`).")] = None,
    remove_all: Annotated[bool, typer.Option("--all", help="Remove every stored audit.")] = False,
    cache_dir: AuditFolder = None,
) -> None:
    """Remove stored audits by key (or all of them): later runs no longer read them."""
    from redjury.audit.runner import audits_dir, stored_audits

    folder = audits_dir(_audit_root(cache_dir))
    if remove_all == bool(keys):
        raise _fail("name audit keys (see 'redjury audits list') or give --all, not both")
    paths = [p for p, _ in stored_audits(_audit_root(cache_dir))] if remove_all else []
    for key in keys or ():
        path = folder / f"{key}.json"
        if "/" in key or not path.is_file():
            raise _fail(f"no stored audit {key!r} in {folder}")
        paths.append(path)
    for path in paths:
        path.unlink(missing_ok=True)
        _echo(f"removed audit {path.stem} ({path})")


COMPLETE_VAR = "_REDJURY_COMPLETE"


class Shell(enum.StrEnum):
    bash = "bash"
    zsh = "zsh"
    fish = "fish"


@app.command()
def completion(
    shell: Annotated[Shell, typer.Argument(help="The shell.")],
) -> None:
    """Print the shell completion script: eval "$(redjury completion bash)" in ~/.bashrc,
    eval "$(redjury completion zsh)" in ~/.zshrc, or redjury completion fish >
    ~/.config/fish/completions/redjury.fish."""
    from typer.completion import completion_init, shell_completion

    completion_init()
    script_class = shell_completion.get_completion_class(shell)
    assert script_class is not None  # completion_init registers every Shell
    command = typer.main.get_command(app)
    typer.echo(script_class(command, {}, "redjury", COMPLETE_VAR).source())


def _echo(message: str) -> None:
    """Print a line on stdout, control characters escaped (names in it come from the config
    or the input); a reader that went away (`| head`) stops nothing."""
    from redjury.pipeline import silence_stdout
    from redjury.report.terminal import printable

    try:
        typer.echo(printable(message))
    except BrokenPipeError:
        silence_stdout()


def main() -> None:
    """Run the command line; the exit status as `SystemExit`."""
    sys.exit(_run_app())


def entry() -> None:
    """The `redjury` command: `main`, then an exit without the interpreter's teardown.

    Freeing every object of a finished run one by one (pydantic's schemas, the modules, the
    run's own) took a tenth of a whole run's time, for a process about to end. The exit
    handlers still run first (a local Ray cluster is stopped, logs are flushed); every file
    the run wrote is closed by then. While a thread other than a daemon is still running,
    the interpreter's own exit is taken: it waits for the thread, as it always has."""
    code = _run_app()
    main_thread = threading.main_thread()
    if any(t is not main_thread and not t.daemon for t in threading.enumerate()):
        sys.exit(code)
    _exit_now(code)


def _exit_now(code: int) -> None:
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a reader gone, a stream closed
            stream.flush()
    os._exit(code)


def _run_app() -> int:
    """The command's exit status; every error reported on stderr. SIGTERM and SIGHUP stop
    a command as Ctrl-C does (redjury.interrupts)."""
    from redjury.interrupts import cause, exit_code, stop_signals_interrupt

    warnings.showwarning = _plain_warning
    if os.environ.get(COMPLETE_VAR):  # the shell asks for completions (`redjury completion`)
        from typer.completion import completion_init

        completion_init()
    try:
        with stop_signals_interrupt():
            code = app(standalone_mode=False, prog_name="redjury", complete_var=COMPLETE_VAR)
    except click_errors.NoArgsIsHelpError as exc:
        typer.echo(exc.format_message(), err=True)
        code = exc.exit_code
    except click_errors.UsageError as exc:
        # click's usage errors in redjury's one error format, with where to read more.
        command = exc.ctx.command_path if exc.ctx is not None else "redjury"
        typer.echo(f"{ERROR_PREFIX}{exc.format_message()} (see '{command} --help')", err=True)
        code = exc.exit_code
    except click_errors.ClickException as exc:
        typer.echo(f"{ERROR_PREFIX}{exc.format_message()}", err=True)
        code = exc.exit_code
    except typer.Abort:
        typer.echo("redjury: interrupted", err=True)
        code = 130
    except KeyboardInterrupt as interrupt:
        typer.echo(f"redjury: {cause(interrupt)}", err=True)
        code = exit_code(interrupt)
    except Exception as exc:  # the last resort: an internal error, exit 1
        from redjury.errors import RunError
        from redjury.report.terminal import printable

        if isinstance(exc, RunError):  # raised where no command expects it (a judge cache)
            typer.echo(f"{ERROR_PREFIX}{printable(str(exc))}", err=True)
            return exc.exit_code
        typer.echo(
            f"{ERROR_PREFIX}internal error: {printable(f'{type(exc).__name__}: {exc}')}", err=True
        )
        code = EXIT_INTERNAL
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        from redjury.pipeline import silence_stdout

        silence_stdout()
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    entry()
