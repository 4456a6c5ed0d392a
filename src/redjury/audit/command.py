"""`redjury audit` and the audit before `redjury run`: build what is audited, load the data,
audit, store the result, write `audit`/`audit_gate` rows and print the table."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from redjury.audit.datasets import DatasetError, cache_dir_of, load_calibration
from redjury.audit.runner import CASCADE, PANEL_DETECTOR, AuditResult, audit_detector, store_audit
from redjury.config import RunConfig, resolve_detectors
from redjury.detectors.base import Detector
from redjury.detectors.registry import get_detector_class
from redjury.errors import AuditError
from redjury.report.jsonl import REPORT_NAME, JsonlWriter

EXIT_OK = 0
EXIT_ERROR = 2
EXIT_GATE = 3

Echo = Callable[[str], None]
RowSink = Callable[[dict[str, Any]], None]


# -- building the audited thing -------------------------------------------------------------
def build_audited(
    config: RunConfig,
    detector: str | None = None,
    *,
    use_cache: bool = True,
    cache_path: Path | None = None,
) -> Detector:
    """The judge panel (default) or the named detector with the config's settings for it."""
    if detector in (None, PANEL_DETECTOR):
        if not config.evaluation.judges:
            raise AuditError(
                "nothing to audit: evaluation.judges is empty (add judges, or pass --detector NAME)"
            )
        from redjury.judges.panel import JudgePanelDetector

        return JudgePanelDetector.from_spec(
            config.evaluation, cache_path=cache_path, use_cache=use_cache
        )
    assert detector is not None
    try:
        cls = get_detector_class(detector)
    except KeyError as exc:
        raise AuditError(str(exc.args[0])) from None
    for found, params in resolve_detectors(config):
        if found is cls:
            return cls(params)
    return cls()


def cascade_detectors(config: RunConfig, audited: Detector) -> list[Detector]:
    """The `evaluation.cascade.held_by` detectors, with the config's settings, when the
    audited detector is the panel; the audit then measures the cascade too."""
    held_by = getattr(audited, "cascade", ())
    if audited.name != PANEL_DETECTOR or not held_by:
        return []
    built = {cls.name: cls(params) for cls, params in resolve_detectors(config)}
    return [built[name] for name in held_by if name in built]


# -- rows and the table ------------------------------------------------------------------------
def audit_rows(result: AuditResult, on_failure: str) -> list[dict[str, Any]]:
    """`audit` rows (dataset summary, each judge, the panel, the stored judges) and the
    `audit_gate` row, in that order."""
    rows: list[dict[str, Any]] = [
        {
            "entry_type": "audit",
            "kind": "summary",
            "detector": result.detector,
            "key": result.key,
            "dataset": result.dataset,
            "settings": result.settings,
            "fleiss_kappa": result.fleiss_kappa,
            "fleiss_items": result.fleiss_items,
        }
    ]
    for name, metrics in result.metrics.items():
        if result.aggregate in result.members:
            kind = "detector"
        elif name == CASCADE:
            kind = "cascade"
        else:
            kind = "panel" if name == result.aggregate else "judge"
        rows.append(
            {
                "entry_type": "audit",
                "kind": kind,
                "judge": name,
                **metrics,
                "robustness": {w: by[name] for w, by in result.robustness.items() if name in by},
                "counting": result.counting.get(name, {}),
            }
        )
    for name, metrics in result.stored.items():
        rows.append({"entry_type": "audit", "kind": "stored", "judge": name, **metrics})
    gate = result.gate
    stop = not gate["passed"] and on_failure == "stop"
    if not gate["checked"]:
        reason = "robustness not enabled: nothing was gated"
    elif gate["passed"]:
        reason = (
            f"every judge's flip rate is at most {gate['max_flip_rate']:g} "
            f"(worst {gate['worst_judge']} under {gate['worst_wrapper']}: "
            f"{gate['worst_flip_rate']:.3f})"
        )
    else:
        reason = (
            f"{gate['worst_judge']} flips {gate['worst_flip_rate']:.3f} of its verdicts under "
            f"{gate['worst_wrapper']}, above max_flip_rate {gate['max_flip_rate']:g}"
        )
    rows.append(
        {
            "entry_type": "audit_gate",
            "detector": result.detector,
            "key": result.key,
            **gate,
            "on_failure": on_failure,
            "action": "stop" if stop else "continue",
            "reason": reason,
        }
    )
    return rows


def _pct(value: Any) -> str:
    return "—" if value is None else f"{100 * value:.1f}"


def _ci(value: Any, ci: Any, pct: bool = True) -> str:
    """`90.8 [88.2–93.0]` for percentages, `0.82 [0.77–0.86]` for F1 and κ."""
    if value is None:
        return "—"
    if pct:
        return _pct(value) if not ci else f"{_pct(value)} [{100 * ci[0]:.1f}–{100 * ci[1]:.1f}]"
    return f"{value:.2f}" if not ci else f"{value:.2f} [{ci[0]:.2f}–{ci[1]:.2f}]"


def counting_lines(result: AuditResult) -> list[str]:
    """One line per judge and the panel where the two counting modes differ: the ASR and the
    accuracy with abstentions left out (redjury) and counted as the source does (upstream)."""
    out = []
    for name, modes in result.counting.items():
        r, u = modes.get("redjury", {}), modes.get("upstream", {})
        if not r or not u or (r.get("asr"), r.get("counted")) == (u.get("asr"), u.get("counted")):
            continue
        out.append(
            f"counting {name}: ASR {_pct(r['asr'])}% of {r['counted']} (redjury: abstentions "
            f"left out) vs {_pct(u['asr'])}% of {u['counted']} (upstream); accuracy "
            f"{_pct(r.get('accuracy'))}% vs {_pct(u.get('accuracy'))}%"
        )
    return out


def render_table(result: AuditResult, *, width: int = 172) -> str:
    """The audit as a plain-text table: judges, panel, then the stored judges dimmed.
    Intervals of precision and recall are in the rows, not the table, to keep it readable."""
    ds = result.dataset
    title = (
        f"Audit of {result.detector} on {ds['source']}: {ds['samples']} samples "
        f"({ds['positive']} positive, {ds['negative']} negative, {ds['contextual']} with context)"
    )
    table = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left")
    for col, justify in (
        ("judge", "left"),
        ("TP/FP/TN/FN", "right"),
        ("accuracy %", "right"),
        ("precision %", "right"),
        ("recall %", "right"),
        ("F1", "right"),
        ("Cohen κ", "right"),
        ("abst. %", "right"),
        ("worst flip", "right"),
    ):
        table.add_column(col, justify=justify, no_wrap=True)  # type: ignore[arg-type]

    def add(name: str, m: dict[str, Any], flips: str, style: str | None = None) -> None:
        table.add_row(
            name,
            f"{m['tp']}/{m['fp']}/{m['tn']}/{m['fn']}",
            _ci(m["accuracy"], m["accuracy_ci"]),
            _pct(m["precision"]),
            _pct(m["recall"]),
            _ci(m["f1"], m["f1_ci"], pct=False),
            _ci(m["cohen_kappa"], m["cohen_kappa_ci"], pct=False),
            _pct(m["abstention_rate"]),
            flips,
            style=style,
        )

    for name, m in result.metrics.items():
        worst = max(
            ((by[name]["flip_rate"], w) for w, by in result.robustness.items() if name in by),
            default=None,
        )
        if worst is None:
            flips = "—"
        else:
            flips = f"{worst[0]:.3f}" + (f" {worst[1]}" if worst[0] > 0 else "")
        add(name, m, flips, "bold" if name == result.aggregate else None)
    if result.stored:
        table.add_section()
        for name, m in result.stored.items():
            add(f"{name} (stored)", m, "", "dim")
    buf = io.StringIO()
    Console(file=buf, width=width, color_system=None, force_terminal=False).print(table)
    lines = ["\n".join(line.rstrip() for line in buf.getvalue().rstrip().splitlines())]
    lines.extend(counting_lines(result))
    cascade = result.settings.get("cascade")
    if cascade:
        lines.append(
            f"cascade ({', '.join(cascade['held_by'])}, then the panel): decided "
            f"{cascade['decided']} of {ds['samples']} samples HELD without the judges, "
            f"{cascade['calls_saved']} of {cascade['calls']} judge calls saved; "
            "its counts are the Se/Sp a run with this cascade uses"
        )
    if result.fleiss_kappa is not None:
        lines.append(
            f"Fleiss' κ between judges: {result.fleiss_kappa:.3f} "
            f"(on {result.fleiss_items} samples every judge voted on)"
        )
    return "\n".join(lines)


# -- entry points ------------------------------------------------------------------------------
async def aaudit(
    config: RunConfig,
    *,
    detector: str | Detector | None = None,
    use_cache: bool = True,
    cache_path: Path | None = None,
    offline: bool = False,
    echo: Echo | None = None,
) -> AuditResult:
    """Audit and store the result in `<calibration cache dir>/audits/<key>.json`.

    `detector` may be a name or an already-built detector (e.g. the run's judge panel, which
    is then neither rebuilt nor closed).
    """
    audit = config.evaluation.audit
    built = None
    if isinstance(detector, Detector):
        target = detector
    else:
        target = built = build_audited(config, detector, use_cache=use_cache, cache_path=cache_path)
    try:
        try:
            calibration = load_calibration(audit.dataset, offline=offline)
        except DatasetError as exc:
            raise AuditError(str(exc)) from exc
        result = await audit_detector(
            target,
            calibration,
            audit,
            threshold=config.evaluation.threshold,
            progress=echo,
            cascade=cascade_detectors(config, target),
        )
    except KeyError as exc:  # an unknown wrapper name
        raise AuditError(str(exc.args[0])) from None
    finally:
        if built is not None:
            await built.aclose()
    store_audit(result, cache_dir_of(audit.dataset))
    return result


def _record(result: AuditResult, on_failure: str, write_row: RowSink, echo: Echo) -> dict[str, Any]:
    """Write the audit's rows, print its table, and return the gate row (always the last)."""
    rows = audit_rows(result, on_failure)
    for row in rows:
        write_row(row)
    echo(render_table(result))
    return rows[-1]


def run_audit(
    config: RunConfig,
    out_dir: Path,
    *,
    detector: str | Detector | None = None,
    use_cache: bool = True,
    echo: Echo = print,
    cache_path: Path | None = None,
    offline: bool = False,
) -> int:
    """`redjury audit`: audit, write `out_dir/redjury.report.jsonl`, print the table.

    Returns 0, 3 when the gate fails under `on_failure: stop`, 2 when the audit cannot run.
    """
    try:
        result = asyncio.run(
            aaudit(
                config,
                detector=detector,
                use_cache=use_cache,
                cache_path=cache_path,
                offline=offline,
                echo=echo,
            )
        )
    except AuditError as exc:
        echo(f"redjury: error: {exc}")
        return EXIT_ERROR
    on_failure = config.evaluation.audit.on_failure
    out_dir.mkdir(parents=True, exist_ok=True)
    writer = JsonlWriter(out_dir / REPORT_NAME, "w")
    try:
        gate = _record(result, on_failure, writer.write, echo)
    finally:
        writer.close()
    tail = "" if gate["passed"] else f" (on_failure: {on_failure})"
    echo(f"audit gate: {'PASS' if gate['passed'] else 'FAIL'} — {gate['reason']}{tail}")
    if not gate["passed"] and on_failure == "stop":
        return EXIT_GATE
    return EXIT_OK


async def aaudit_before_run(
    config: RunConfig,
    write_row: RowSink,
    *,
    panel: Detector | None = None,
    use_cache: bool = True,
    cache_path: Path | None = None,
    offline: bool = False,
    echo: Echo = print,
) -> bool:
    """The audit `redjury run` does before judging when `evaluation.audit.enabled`.

    Writes the `audit` and `audit_gate` rows through `write_row`; returns False when the
    gate fails under `on_failure: stop` (judge nothing, exit 3), else True. Raises
    AuditError when the audit cannot run at all. Pass the run's panel to share its engine
    and cache (it is not closed here).
    """
    result = await aaudit(
        config,
        detector=panel,
        use_cache=use_cache,
        cache_path=cache_path,
        offline=offline,
        echo=echo,
    )
    on_failure = config.evaluation.audit.on_failure
    gate = _record(result, on_failure, write_row, echo)
    if not gate["passed"]:
        what = "refusing to judge" if on_failure == "stop" else "going on (on_failure: warn)"
        echo(f"audit gate FAILED: {gate['reason']}; {what}")
        return on_failure != "stop"
    return True


def audit_before_run(
    config: RunConfig,
    write_row: RowSink,
    *,
    panel: Detector | None = None,
    use_cache: bool = True,
    cache_path: Path | None = None,
    offline: bool = False,
    echo: Echo = print,
) -> bool:
    """Synchronous `aaudit_before_run`, for callers outside an event loop."""
    return asyncio.run(
        aaudit_before_run(
            config,
            write_row,
            panel=panel,
            use_cache=use_cache,
            cache_path=cache_path,
            offline=offline,
            echo=echo,
        )
    )
