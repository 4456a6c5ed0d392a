"""The `redjury` command: a thin shell that parses flags and calls the library."""

# No `from __future__ import annotations` here: typer reads each command's annotations, and
# evaluating them as strings took ~11 ms of every command's start (14 against 3 ms).

import atexit
import contextlib
import datetime as dt
import json
import os
import sys
import threading
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from redjury.config import ConfigError, RunConfig, load_config, parse_config
from redjury.inputs import InputError
from redjury.report.jsonl import HITLOG_NAME, REPORT_NAME

if TYPE_CHECKING:
    from redjury.detectors.base import Detector

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

EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_AUDIT, EXIT_GATE = 0, 1, 2, 3, 4


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
    extra_detectors = overrides.pop("_detectors", [])
    if extra_detectors:
        current = data["detectors"]
        if current is None:
            from redjury.detectors.registry import detector_classes

            current = [{"type": n} for n, c in detector_classes().items() if c.default_enabled]
        replaced = {e["type"] for e in extra_detectors}
        current = [d for d in current if d["type"] not in replaced] + extra_detectors
        data["detectors"] = current
    for dotted, value in overrides.items():
        if value is None:
            continue
        section, _, key = dotted.partition(".")
        data.setdefault(section, {})[key] = value
    try:
        return parse_config(data, "command line")
    except ConfigError as exc:
        raise _fail("\n".join(exc.messages)) from None


@app.command()
def run(
    inputs: Annotated[
        list[Path],
        typer.Argument(
            help="Attempt files: redjury JSONL, garak report.jsonl, promptfoo results, inspect_ai logs, PyRIT or Azure red-team results."
        ),
    ],
    config: Annotated[Path | None, typer.Option("--config", "-c", help="YAML config file.")] = None,
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
    from redjury.api import evaluate
    from redjury.pipeline import RunError, RunInterrupted
    from redjury.report.terminal import printable

    _out_folder(out)
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
    }
    if zero_tolerance:
        overrides["evaluator.type"] = "zero_tolerance"
    extra = []
    if budget_ms is not None:
        extra.append({"type": "latency", "budget_ms": budget_ms})
    if budget_tokens is not None:
        extra.append({"type": "cost", "budget_tokens": budget_tokens})
    overrides["_detectors"] = extra
    cfg = apply_overrides(cfg, overrides)
    out_dir = out or Path("runs") / dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    try:
        result = evaluate(
            list(inputs),
            cfg,
            out=out_dir,
            skip_bad_lines=skip_bad_lines,
            use_cache=not no_cache,
            offline=offline,
            preflight=not no_preflight,
            engine=engine,
            ray_address=ray_address,
            ray_workers=ray_workers,
            keep_shards=keep_shards,
            workers=workers,
            stream=sys.stdout,
            verbose=verbose,
            colour=colour,
            config_path=str(config) if config else None,
        )
    except InputError as exc:
        raise _fail(f"bad input, nothing judged:{chr(10) if exc.errors else ' '}{exc}") from None
    except RunInterrupted as exc:
        typer.echo(f"redjury: {printable(str(exc))}", err=True)
        raise typer.Exit(exc.exit_code) from None
    except RunError as exc:
        raise _fail(str(exc), exc.exit_code) from None
    except (ConfigError, ValueError) as exc:
        raise _fail(str(exc)) from None
    _echo(f"report: {out_dir / REPORT_NAME}")
    _echo(f"hitlog: {out_dir / HITLOG_NAME}")
    if result.input_errors:
        _echo(f"skipped {result.input_errors} bad input lines (input_error rows in the report)")
    from redjury.report.outputs import post_run

    try:
        code = post_run(out_dir, cfg.reporting, _echo)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    if code:
        raise typer.Exit(code)


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
    from redjury.api import audit as run_audit
    from redjury.audit.command import audit_rows, render_table
    from redjury.audit.runner import AuditError

    _out_folder(out)
    try:
        cfg = load_config(config)
    except ConfigError as exc:
        raise _fail("\n".join(exc.messages)) from None
    out_dir = out or Path("runs") / dt.datetime.now().strftime("audit-%Y%m%d-%H%M%S")
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
    try:
        cfg = load_config(config)
    except ConfigError as exc:
        raise _fail("\n".join(exc.messages)) from None
    if token is None:
        typer.echo("redjury serve: no --token-env: no auth, loopback only", err=True)
    settings = ServeSettings(
        host=host, port=port, token=token, max_body_bytes=max_body_bytes, max_batch=max_batch,
        client_concurrency=client_concurrency, drain_seconds=drain_seconds,
        use_cache=not no_cache, preflight=not no_preflight,
    )  # fmt: skip
    from redjury.judges.preflight import PreflightError

    try:
        run_service(cfg, settings, lambda line: typer.echo(f"redjury serve: {line}", err=True))
    except OSError as exc:
        raise _fail(f"--host {host} --port {port}: {exc.strerror or exc}") from None
    except PreflightError as exc:
        raise _fail(str(exc)) from None


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

    table = Table("name", "family", "hazards", "description", "source", box=None)
    for item in items:
        table.add_row(
            item["name"],
            item["family"],
            ", ".join(item["hazards"]) or "-",
            item["description"],
            item.get("relation", ""),
        )
    Console(width=160).print(table)


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
    """The command's exit status; every error reported on stderr."""
    warnings.showwarning = _plain_warning
    try:
        code = app(standalone_mode=False)
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
    except (typer.Abort, KeyboardInterrupt):
        typer.echo("redjury: interrupted", err=True)
        code = 130
    except Exception as exc:  # the last resort: an internal error, exit 1
        from redjury.report.terminal import printable

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
