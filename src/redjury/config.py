"""The whole run configuration: one pydantic tree loaded from YAML, errors named by key path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from redjury.detectors.base import Detector, DetectorParams
from redjury.detectors.registry import detector_classes
from redjury.judges.config import EvaluationSpec


class ConfigError(ValueError):
    """A configuration problem; each message names the key path it is about."""

    def __init__(self, messages: list[str]) -> None:
        super().__init__("\n".join(messages))
        self.messages = messages


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


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


class DetectorMetric(_Strict):
    se: float = Field(ge=0.0, le=1.0, description="Sensitivity of the detector.")
    sp: float = Field(ge=0.0, le=1.0, description="Specificity of the detector.")


class ReportingSpec(_Strict):
    """Statistics and output settings."""

    confidence_interval_method: Literal["bootstrap", "wilson", "none"] = Field(
        "bootstrap", description="How the attack-success-rate interval is computed."
    )
    bootstrap_num_iterations: int = Field(10000, gt=0, description="Bootstrap resamples.")
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
        description="Random seed of the statistics; null draws one and records it in the run header.",
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
        None, description="A garak `detector_metrics_summary.json` with per-detector Se/Sp."
    )
    calibration: str | None = Field(
        None, description="Calibration JSON for Z-scores and DEFCON ratings."
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
        None, description="Write JUnit XML (one test case per probe × detector) to this path."
    )
    fail_on_asr: float | dict[str, float] | None = Field(
        None,
        description="Exit 4 when a probe × detector attack-success rate exceeds this (a number, or `{detector: rate}`).",
    )
    fail_on_errors: int | None = Field(
        None, ge=0, description="Exit 4 when more than this many replies ended in judge errors."
    )

    @field_validator("hit_at_k")
    @classmethod
    def _positive_k(cls, value: list[int] | None) -> list[int] | None:
        if value is not None and any(k < 1 for k in value):
            raise ValueError("every k must be >= 1")
        return value


class DetectorEntry(BaseModel):
    """One `detectors:` list entry: `type` plus that detector's own settings."""

    model_config = ConfigDict(extra="allow")

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


def _loc(loc: tuple[int | str, ...], prefix: str = "") -> str:
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(root)"


def format_validation_error(exc: ValidationError, prefix: str = "") -> list[str]:
    return [f"{_loc(err['loc'], prefix)}: {err['msg']}" for err in exc.errors()]


def resolve_detectors(config: RunConfig) -> list[tuple[type[Detector], DetectorParams]]:
    classes = detector_classes()
    if config.detectors is None:
        return [(cls, cls.Params()) for cls in classes.values() if cls.default_enabled]
    resolved: list[tuple[type[Detector], DetectorParams]] = []
    errors: list[str] = []
    for i, entry in enumerate(config.detectors):
        cls = classes.get(entry.type)
        if cls is None or cls.name == "judge_panel":
            errors.append(
                f"detectors[{i}].type: unknown detector {entry.type!r}; known: "
                + ", ".join(n for n in classes if n != "judge_panel")
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
            resolved.append((cls, cls.Params.model_validate(params)))
        except ValidationError as exc:
            errors.extend(format_validation_error(exc, f"detectors[{i}]"))
        except ValueError as exc:
            errors.append(f"detectors[{i}]: {exc}")
    if errors:
        raise ConfigError(errors)
    return resolved


def parse_config(data: Any, source: str = "config") -> RunConfig:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError([f"{source}: the top level must be a mapping"])
    try:
        config = RunConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError([f"{source}: {m}" for m in format_validation_error(exc)]) from None
    try:
        resolve_detectors(config)
    except ConfigError as exc:
        raise ConfigError([f"{source}: {m}" for m in exc.messages]) from None
    return config


def load_config(path: str | Path | None) -> RunConfig:
    """Load and validate a YAML config; None gives the defaults."""
    if path is None:
        return parse_config({})
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError([f"{p}: cannot read: {exc.strerror}"]) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError([f"{p}: not valid YAML: {exc}"]) from None
    config = parse_config(data, str(p))
    if config.schema_dir is None:
        # Schema names and relative paths in a config file resolve next to that file.
        config.schema_dir = str(p.resolve().parent)
    return config


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
    """The configuration reference table of the README, generated from the models."""
    lines = ["| key | default | meaning |", "| --- | --- | --- |"]
    for key, default, meaning in _model_rows(RunConfig, ""):
        lines.append(f"| `{key}` | {default} | {meaning} |")
    lines.append("")
    lines.append("Detector settings (`detectors[]` entries: `type` plus these keys):")
    lines.append("")
    lines.append("| detector | key | default | meaning |")
    lines.append("| --- | --- | --- | --- |")
    for name, cls in detector_classes().items():
        if name == "judge_panel":
            continue
        rows = _model_rows(cls.Params, "")
        if not rows:
            lines.append(f"| `{name}` | | | no settings |")
        for key, default, meaning in rows:
            lines.append(f"| `{name}` | `{key}` | {default} | {meaning} |")
    return "\n".join(lines) + "\n"
