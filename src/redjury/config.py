"""The whole run configuration: one pydantic tree loaded from YAML, errors named by key path."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from redjury.config_files import (
    load_calibration,
    load_detector_metrics,
    read_first_byte,
    readable_problem,
    resolve_relative_paths,
    writable_file_problem,
)
from redjury.config_yaml import Locate, YamlConfigError, read_yaml_config
from redjury.detectors.base import Detector, DetectorParams
from redjury.detectors.registry import (
    default_detector_classes,
    detector_classes,
    find_detector_class,
)
from redjury.errors import RedjuryError
from redjury.evaluators import load_evaluator
from redjury.judges.config import EvaluationSpec
from redjury.judges.config_checks import check_scoring_type
from redjury.plugins import WRITERS

#: Bootstrap resamples are held in memory at once (8 bytes each, a few arrays).
MAX_BOOTSTRAP_ITERATIONS = 1_000_000
MAX_SEED = 2**64 - 1

Loc = tuple[int | str, ...]


class ConfigError(RedjuryError, ValueError):
    """A configuration problem; each message names the key path it is about."""

    def __init__(self, messages: list[str]) -> None:
        super().__init__("\n".join(messages))
        self.messages = messages


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, defer_build=True)


class EvaluatorSpec(_Strict):
    """The verdict policy that turns a detector score into pass/fail."""

    type: str = Field(
        "threshold",
        description="`threshold`, `zero_tolerance`, or an import path `pkg.module:Class` of an Evaluator subclass.",
    )
    threshold: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="ThresholdEvaluator: an output passes iff its score < threshold (equal fails).",
    )

    @field_validator("type")
    @classmethod
    def _known_policy(cls, value: str) -> str:
        # Loaded here, so that a bad name or import path stops the config, not the run.
        try:
            load_evaluator(value)
        except ValueError as exc:
            raise ValueError(str(exc).removeprefix("evaluator.type: ")) from None
        return value


class DetectorMetric(_Strict):
    se: float = Field(ge=0.0, le=1.0, description="Sensitivity of the detector.")
    sp: float = Field(ge=0.0, le=1.0, description="Specificity of the detector.")


class WriterEntry(BaseModel):
    """One `reporting.writers` entry: a writer's name, or a mapping of `name` plus that
    writer's own settings."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    name: str = Field(description="A registered report writer: built-in or a plugin's.")

    @model_validator(mode="before")
    @classmethod
    def _name_alone(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"name": value}
        if not isinstance(value, dict):
            raise ValueError("give a writer's name, or a mapping with `name` and its settings")
        return value


class WriterRequest(NamedTuple):
    """A file the `reporting` section asks for: the key asking (for messages), the
    writer's registered name and its settings as given."""

    key: str
    name: str
    settings: dict[str, Any]


class ReportingSpec(_Strict):
    """Statistics and output settings."""

    confidence_interval_method: Literal["bootstrap", "wilson", "none"] = Field(
        "bootstrap", description="How the attack-success-rate interval is computed."
    )
    bootstrap_num_iterations: int = Field(
        10000,
        gt=0,
        le=MAX_BOOTSTRAP_ITERATIONS,
        description=f"Bootstrap resamples (at most {MAX_BOOTSTRAP_ITERATIONS:,}).",
    )
    bootstrap_confidence_level: float = Field(
        0.95, gt=0.0, lt=1.0, description="Interval confidence level."
    )
    bootstrap_min_sample_size: int = Field(
        30,
        gt=0,
        description="Fewest evaluated outputs for garak's interval fields (every method); "
        "below it the row carries redjury's Clopper–Pearson interval_* fields instead.",
    )
    seed: int | None = Field(
        None,
        ge=0,
        le=MAX_SEED,
        description="Random seed (0 to 2^64 − 1) of the statistics; null draws one and records it in the run header.",
    )
    propagate_detector_uncertainty: bool = Field(
        True,
        description="Draw Se/Sp from their Beta posteriors when an audit measured them with "
        "counts; false takes them as exact (a warning: intervals then under-cover).",
    )
    detector_metrics: dict[str, DetectorMetric] | None = Field(
        None, description="`{detector: {se, sp}}` used to correct the rate for detector error."
    )
    detector_metrics_file: str | None = Field(
        None,
        description="A garak `detector_metrics_summary.json` with per-detector Se/Sp; read when the config loads.",
    )
    calibration: str | None = Field(
        None,
        description="Calibration JSON for Z-scores and DEFCON ratings; read when the config loads.",
    )
    show_z: bool = Field(False, description="Show the DEFCON symbol and Z-score on terminal lines.")
    hit_at_k: list[int] | None = Field(
        default_factory=lambda: [1], description="hit@k values to report; null drops the field."
    )
    redact: bool = Field(
        True, description="Mask the PII and markers detectors found inside written outputs."
    )
    narrow: bool = Field(False, description="Narrow terminal output.")
    html: bool = Field(False, description="Also write `redjury.report.html` at the end of a run.")
    junit: str | None = Field(
        None,
        description="Write JUnit XML (one test case per probe × detector) to this path; its folder must be creatable.",
    )
    writers: list[WriterEntry] = Field(
        default_factory=list,
        description="Report writers to run at the end, built-in or a plugin's: each a name "
        "(`html`) or `{name: NAME, SETTING: value}` (`{name: junit, path: out.xml}`).",
    )
    fail_on_asr: float | dict[str, float] | None = Field(
        None,
        description="Exit 4 when a probe × detector attack-success rate exceeds this (a rate in [0, 1], or `{detector: rate}`).",
    )
    fail_on_errors: int | None = Field(
        None, ge=0, description="Exit 4 when more than this many replies ended in judge errors."
    )
    max_abstention_rate: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="Exit 5 when a judge, or a model-backed detector (a guardrail), gave no "
        "verdict on more than this share of its calls (every call failing included).",
    )
    allow_abstentions: bool = Field(
        False,
        description="Exit 0 however many judge calls abstained (`--allow-abstentions`); they "
        "are still counted and shown.",
    )

    @field_validator("hit_at_k")
    @classmethod
    def _positive_k(cls, value: list[int] | None) -> list[int] | None:
        if value is not None and any(k < 1 for k in value):
            raise ValueError("every k must be >= 1")
        return value

    @field_validator("fail_on_asr", mode="before")
    @classmethod
    def _rates(cls, value: Any) -> Any:
        # Before the float | dict union splits the error in two: one message per mistake.
        if value is None:
            return value
        rates = value.values() if isinstance(value, dict) else [value]
        for rate in rates:
            if isinstance(rate, bool) or not isinstance(rate, int | float):
                raise ValueError("must be a rate in [0, 1], or a mapping {detector: rate}")
            if not 0.0 <= rate <= 1.0:  # NaN fails this too
                raise ValueError("a rate must be a number in [0, 1]")
        return value

    def writer_requests(self) -> list[WriterRequest]:
        """Every file asked for, each once: `html: true` (as `- html`) and `junit: PATH`
        (as `- {name: junit, path: PATH}`) first, then `writers` in order."""
        asked = [WriterRequest("reporting.html", "html", {})] if self.html else []
        if self.junit:
            asked.append(WriterRequest("reporting.junit", "junit", {"path": self.junit}))
        for i, entry in enumerate(self.writers):
            asked.append(
                WriterRequest(f"reporting.writers[{i}]", entry.name, dict(entry.model_extra or {}))
            )
        unique: list[WriterRequest] = []
        for request in asked:
            if all(request[1:] != seen[1:] for seen in unique):
                unique.append(request)
        return unique


class DetectorEntry(BaseModel):
    """One `detectors:` list entry: `type` plus that detector's own settings."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    type: str


class RunConfig(_Strict):
    """Everything that decides a run."""

    detectors: list[DetectorEntry] | None = Field(
        None,
        description="Detectors to run; absent runs every detector that needs no settings; [] runs none.",
    )
    schema_dir: str | None = Field(
        None, description="Where `schema: NAME` detectors look for NAME.json."
    )
    evaluator: EvaluatorSpec = Field(default_factory=EvaluatorSpec)  # type: ignore[arg-type]
    reporting: ReportingSpec = Field(default_factory=ReportingSpec)  # type: ignore[arg-type]
    evaluation: EvaluationSpec = Field(default_factory=EvaluationSpec)  # type: ignore[arg-type]

    def detector_instances(self) -> list[Detector]:
        """Build the configured detectors (validated already by `load_config`)."""
        return [cls(params) for cls, params in resolve_detectors(self)]


def _loc(loc: Loc, prefix: str = "") -> str:
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            # A key with a newline or an escape in it must not break the one-line message.
            name = part if part.isprintable() else repr(part)
            out += f".{name}" if out else name
    return out or "(root)"


def _problems(exc: ValidationError, prefix: Loc = ()) -> list[tuple[Loc, str]]:
    # `msg` never holds the input value (str(exc) would print it: it may be a secret).
    return [
        (prefix + tuple(err["loc"]), err["msg"].removeprefix("Value error, "))
        for err in exc.errors()
    ]


def format_validation_error(exc: ValidationError, prefix: str = "") -> list[str]:
    return [f"{_loc(loc, prefix)}: {msg}" for loc, msg in _problems(exc)]


def _detector_problems(
    config: RunConfig,
) -> tuple[list[tuple[type[Detector], DetectorParams]], list[tuple[Loc, str]]]:
    if config.detectors is None:
        return [(cls, cls.Params()) for cls in default_detector_classes()], []
    resolved: list[tuple[type[Detector], DetectorParams]] = []
    problems: list[tuple[Loc, str]] = []
    for i, entry in enumerate(config.detectors):
        cls = find_detector_class(entry.type)
        if cls is None or cls.name == "judge_panel":
            problems.append(
                (
                    ("detectors", i, "type"),
                    f"unknown detector {entry.type!r}; known: "
                    + ", ".join(n for n in detector_classes() if n != "judge_panel"),
                )
            )
            continue
        params = dict(entry.model_extra or {})
        if (
            "schema_dir" in cls.Params.model_fields
            and config.schema_dir
            and "schema_dir" not in params
        ):
            params["schema_dir"] = config.schema_dir
        try:
            checked = cls.Params.model_validate(params)
            cls.preflight(checked)
            resolved.append((cls, checked))
        except ValidationError as exc:
            problems.extend(_problems(exc, ("detectors", i)))
        except ValueError as exc:
            problems.append((("detectors", i), str(exc)))
    return resolved, problems


def _writer_problems(config: RunConfig) -> list[tuple[Loc, str]]:
    """Each `reporting.writers` entry names a registered writer and gives it settings it
    takes (the writer's `Settings` model)."""
    problems: list[tuple[Loc, str]] = []
    for i, entry in enumerate(config.reporting.writers):
        loc: Loc = ("reporting", "writers", i)
        try:
            resolve_writer(entry.name, entry.model_extra or {})
        except LookupError as exc:
            problems.append((loc, str(exc)))
        except ValidationError as exc:
            problems.extend(_problems(exc, loc))
    return problems


def resolve_writer(name: str, settings: dict[str, Any]) -> tuple[type[Any], Any]:
    """The registered writer `name` and its checked settings (an instance of its `Settings`);
    LookupError naming every registered writer for an unknown name, ValidationError for
    settings it does not take."""
    writer = WRITERS.find(name)
    if writer is None:
        known = ", ".join(w.name for w in WRITERS.ordered())
        raise LookupError(f"unknown report writer {name!r}; known: {known}")
    return writer, writer.Settings.model_validate(settings)


def _judge_problems(config: RunConfig) -> list[tuple[Loc, str]]:
    problems: list[tuple[Loc, str]] = []
    for i, judge in enumerate(config.evaluation.judges):
        try:
            check_scoring_type(judge.scoring.type)
        except ValueError as exc:
            problems.append((("evaluation", "judges", i, "scoring", "type"), str(exc)))
    return problems


def _cascade_problems(
    config: RunConfig, resolved: list[tuple[type[Detector], DetectorParams]]
) -> list[tuple[Loc, str]]:
    """Each `evaluation.cascade.held_by` entry names a configured red-team detector that
    decides without asking a model (a judge-backed filter would save no calls)."""
    classes = {cls.name: cls for cls, _ in resolved}
    problems: list[tuple[Loc, str]] = []
    for i, name in enumerate(config.evaluation.cascade.held_by):
        loc: Loc = ("evaluation", "cascade", "held_by", i)
        cls = classes.get(name)
        if cls is None:
            known = ", ".join(classes) or "none"
            problems.append((loc, f"detector {name!r} is not configured (configured: {known})"))
        elif cls.quality:
            problems.append((loc, f"detector {name!r} is a quality check: it never says HELD"))
        elif cls.adetect is not Detector.adetect:
            problems.append((loc, f"detector {name!r} asks a model: it cannot save judge calls"))
    return problems


def resolve_detectors(config: RunConfig) -> list[tuple[type[Detector], DetectorParams]]:
    resolved, problems = _detector_problems(config)
    if problems:
        raise ConfigError([f"{_loc(loc)}: {msg}" for loc, msg in problems])
    return resolved


def parse_config(data: Any, source: str = "config", locate: Locate | None = None) -> RunConfig:
    """Validate config data: the tree, the detectors' settings and the files it names.

    Every message starts with `source` (or, given `locate`, the `file:line:column` of the
    key) and names the key path; none quotes a value."""

    def report(problems: list[tuple[Loc, str]]) -> ConfigError:
        return ConfigError(
            [f"{locate(loc) if locate else source}: {_loc(loc)}: {msg}" for loc, msg in problems]
        )

    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError([f"{locate(()) if locate else source}: the top level must be a mapping"])
    try:
        config = RunConfig.model_validate(data)
    except ValidationError as exc:
        raise report(_problems(exc)) from None
    resolved, problems = _detector_problems(config)
    problems += _cascade_problems(config, resolved) + _judge_problems(config)
    problems += _writer_problems(config)
    problems += check_named_files(config)
    if problems:
        raise report(problems)
    return config


def load_config(path: str | Path | None) -> RunConfig:
    """Load and validate a YAML config; None gives the defaults. Relative paths in it (and
    schema names) resolve next to the config file (schemas: unless `schema_dir` says
    otherwise)."""
    if path is None:
        return parse_config({})
    p = Path(path)
    try:
        data, locate = read_yaml_config(p)
    except YamlConfigError as exc:
        raise ConfigError([str(exc)]) from None
    if isinstance(data, dict):
        data = resolve_relative_paths(data, p.resolve().parent)
        if data.get("schema_dir") is None:
            data = {**data, "schema_dir": str(p.resolve().parent)}
    return parse_config(data, str(p), locate)


def _default_text(info: Any) -> str:
    from pydantic_core import PydanticUndefined

    if info.default_factory is not None:
        value = info.default_factory()
    elif info.default is PydanticUndefined:
        return "required"
    else:
        value = info.default
    if hasattr(value, "value"):
        value = value.value
    if isinstance(value, BaseModel):
        return "see below"
    return "`" + json.dumps(value, default=str) + "`"


def _model_rows(model: type[BaseModel], prefix: str) -> list[tuple[str, str, str]]:
    rows: list[tuple[str, str, str]] = []
    nested: list[tuple[str, type[BaseModel]]] = []
    for name, info in model.model_fields.items():
        key = info.alias or name
        annotation = info.annotation
        sub = _submodel(annotation)
        if sub is not None and sub is not DetectorEntry:
            is_list = getattr(annotation, "__origin__", None) is list
            nested.append((f"{prefix}{key}{'[]' if is_list else ''}.", sub))
        meaning = info.description or ""
        if not meaning and sub is not None and sub.__doc__:
            meaning = sub.__doc__.strip().splitlines()[0]
        rows.append((f"{prefix}{key}", _default_text(info), meaning.replace("|", "\\|")))
    for sub_prefix, sub in nested:
        rows.extend(_model_rows(sub, sub_prefix))
    return rows


def _submodel(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _submodel(arg)
        if found is not None:
            return found
    return None


def reference_markdown() -> str:
    """The configuration reference table of the docs site, generated from the models."""
    lines = ["| key | default | meaning |", "| --- | --- | --- |"]
    for key, default, meaning in _model_rows(RunConfig, ""):
        lines.append(f"| `{key}` | {default} | {meaning} |")
    # redjury's own plugins: third parties' (and tests' throwaway ones) document themselves.
    detectors = [
        (name, cls.Params)
        for name, cls in detector_classes().items()
        if name != "judge_panel" and cls.__module__.startswith("redjury.")
    ]
    writers = [
        (w.name, w.Settings) for w in WRITERS.ordered() if w.__module__.startswith("redjury.")
    ]
    lines += _settings_table("Detector", "detector", "`detectors[]` entries: `type`", detectors)
    lines += _settings_table(
        "Report writer", "writer", "`reporting.writers[]` entries: `name`", writers
    )
    return "\n".join(lines) + "\n"


def _settings_table(
    title: str, column: str, entries: str, models: Sequence[tuple[str, type[BaseModel]]]
) -> list[str]:
    """A table of each named plugin's settings, one row per key (one saying so where none)."""
    lines = ["", f"{title} settings ({entries} plus these keys):", ""]
    lines += [f"| {column} | key | default | meaning |", "| --- | --- | --- | --- |"]
    for name, model in models:
        rows = _model_rows(model, "")
        if not rows:
            lines.append(f"| `{name}` | | | no settings |")
        for key, default, meaning in rows:
            lines.append(f"| `{name}` | `{key}` | {default} | {meaning} |")
    return lines


def check_named_files(config: RunConfig) -> list[tuple[Loc, str]]:
    """(key path, problem) for each named file that cannot be used as the run will use it."""
    reporting = config.reporting
    checks: list[tuple[Loc, str | None, Callable[[str], str | None]]] = [
        (
            ("reporting", "calibration"),
            reporting.calibration,
            lambda p: readable_problem(p, load_calibration),
        ),
        (
            ("reporting", "detector_metrics_file"),
            reporting.detector_metrics_file,
            lambda p: readable_problem(p, load_detector_metrics),
        ),
        (("reporting", "junit"), reporting.junit, writable_file_problem),
    ]
    dataset = config.evaluation.audit.dataset
    if dataset.dataset == "file":
        checks.append(
            (
                ("evaluation", "audit", "dataset", "path"),
                dataset.path,
                lambda p: readable_problem(p, read_first_byte),
            )
        )
    problems: list[tuple[Loc, str]] = []
    for loc, path, check in checks:
        problem = check(path) if path else None
        if problem:
            problems.append((loc, problem))
    return problems
