"""Which settings decide a run's rows, and which only decide how the run goes.

A run folder is resumed only under the same decisive settings: their hash is the report's
`config_fingerprint`, and the settings themselves, secrets masked, are kept beside it
(`decisive_config` in the `init` row) so that a refused resume can say what changed.

Every field of every config model reached through decisive settings is named below, either
as OPERATIONAL (it can change when or whether an answer arrives, or what the terminal shows
and the exit code, never what a row says) or as DECISIVE. tests/test_config_decisive.py
fails on a field named in neither, so a new setting cannot slip into either side unnoticed.
A plugin's model is not named here: all its fields are decisive.
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from redjury.config import RunConfig, resolve_detectors
from redjury.detectors.base import Detector
from redjury.judges.config import ConnectionSpec
from redjury.plugins import WRITERS
from redjury.redaction import HEADER_VALUE_MASK, MIN_SECRET_LENGTH, credentials_of

# The models by import path: naming a detector's settings must not import the detector.
_CONFIG = "redjury.config."
_JUDGES = "redjury.judges.config."
_QUALITY = "redjury.judges.agentic."
_DETECTORS = "redjury.detectors."

#: Fields that can change neither a verdict nor a kept row; a resume may change them.
OPERATIONAL: Mapping[str, frozenset[str]] = {
    # How results are shown and the exit code: the rows are the same.
    _CONFIG + "ReportingSpec": frozenset(
        {"show_z", "narrow", "html", "junit", "writers", "fail_on_asr", "fail_on_errors"}
        | {"max_abstention_rate", "allow_abstentions"}
    ),
    # How many requests at once and how failed ones are retried: whether and when an answer
    # arrives, never what it says (an unanswered call abstains, as on any network failure).
    # The audit: a resume keeps the recorded gate, which decides again.
    _JUDGES + "EvaluationSpec": frozenset(
        {"max_concurrency", "per_endpoint_concurrency", "max_retries"}
        | {"retry_base_delay", "retry_max_delay", "audit"}
    ),
    # A free label; where the key is read from; how long to wait; which CAs to trust; how
    # requests are gathered into batches, polled and waited for. `batch` itself is decisive.
    _JUDGES + "ConnectionSpec": frozenset(
        {"provider", "api_key_env", "timeout", "ca_bundle"}
        | {"batch_size", "batch_gather", "batch_poll", "batch_live_preflight", "batch_max_wait"}
    ),
    # Where the pinned file is downloaded from and kept: every load is checked against the
    # pins (or `sha256`), so these decide only whether the file can be had.
    _JUDGES + "UpstreamSpec": frozenset({"cache_dir", "base_url", "timeout", "offline"}),
    # The judge cache, as `--no-cache` (never in the fingerprint either).
    _QUALITY + "base.QualityJudgeParams": frozenset({"cache", "cache_path"}),
}

#: Fields that may change a verdict or a row: a resume must keep them.
DECISIVE: Mapping[str, frozenset[str]] = {
    _CONFIG + "RunConfig": frozenset(
        {"detectors", "schema_dir", "evaluator", "reporting", "evaluation"}
    ),
    _CONFIG + "EvaluatorSpec": frozenset({"type", "threshold"}),
    _CONFIG + "ReportingSpec": frozenset(
        {"confidence_interval_method", "bootstrap_num_iterations", "bootstrap_confidence_level"}
        | {"bootstrap_min_sample_size", "seed", "propagate_detector_uncertainty"}
        | {"detector_metrics", "detector_metrics_file", "calibration", "hit_at_k", "redact"}
    ),
    _CONFIG + "DetectorMetric": frozenset({"se", "sp"}),
    _JUDGES + "EvaluationSpec": frozenset(
        {"judges", "aggregation", "threshold", "require_all_judges", "short_circuit"}
        | {"cascade", "max_answer_bytes", "cache_per_server"}
    ),
    _JUDGES + "CascadeSpec": frozenset({"held_by"}),
    _JUDGES + "JudgeSpec": frozenset(
        {"name", "id", "connection", "generation", "options", "scoring"}
    ),
    _QUALITY + "base.QualityJudgeSpec": frozenset(
        {"name", "id", "connection", "generation", "options"}
    ),
    # `headers`: names and values, except the values of CREDENTIAL_HEADERS.
    _JUDGES + "ConnectionSpec": frozenset(
        {"type", "base_url", "headers", "api_version", "deployment", "price", "batch"}
    ),
    _JUDGES + "PriceSpec": frozenset({"input", "output", "batch_input", "batch_output"}),
    _JUDGES + "GenerationSpec": frozenset(
        {"temperature", "max_tokens", "seed", "stop", "response_format"}
    ),
    _JUDGES + "ScoringSpec": frozenset(
        {"type", "system_prompt", "template", "parsing", "upstream", "logprobs", "completions"}
    ),
    _JUDGES + "UpstreamSpec": frozenset({"revision", "sha256", "prompt_file"}),
    _QUALITY + "base.QualityJudgeParams": frozenset({"judge"}),
    _QUALITY + "correctness.CorrectnessParams": frozenset({"passing_threshold"}),
    _QUALITY + "summarization.SummarizationParams": frozenset({"passing_threshold", "rubric"}),
    _QUALITY + "toxicity.ToxicityParams": frozenset({"classifier"}),
    _DETECTORS + "phrases.PhraseParams": frozenset(
        {"phrases", "extra_refusals", "extra_completions", "extra_exclusions"}
    ),
    _DETECTORS + "jailbreak.JailbreakHeuristicParams": frozenset(
        {"goal_overlap", "delivery_words", "caution_density"}
    ),
    _DETECTORS + "injection.PromptInjectionParams": frozenset({"markers"}),
    _DETECTORS + "secrets.SecretExfiltrationParams": frozenset({"markers"}),
    _DETECTORS + "schema.SchemaParams": frozenset({"schema_", "schema_dir"}),
    _DETECTORS + "guardrail.GuardrailParams": frozenset({"guardrail", "options", "hazards"}),
    _DETECTORS + "budgets.LatencyParams": frozenset({"budget_ms"}),
    _DETECTORS + "budgets.CostParams": frozenset({"budget_tokens"}),
}

#: Headers that carry a credential: a new key or token cannot change which model answers.
CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "api-key", "x-api-key"})

#: The `init` row's key for the decisive settings kept beside `config_fingerprint`.
DECISIVE_KEY = "decisive_config"
#: The first differences a refused resume names.
NAMED_DIFFERENCES = 3
_SHOWN_CHARS = 60


def model_path(model: type) -> str:
    """`module.Class`: how the tables above name a model."""
    return f"{model.__module__}.{model.__qualname__}"


def _named(table: Mapping[str, frozenset[str]], model: type[BaseModel]) -> set[str]:
    paths = [model_path(cls) for cls in model.__mro__]
    return {name for path in paths if path in table for name in table[path]}


def operational_fields(model: type[BaseModel]) -> set[str]:
    """The fields of `model` (its own and inherited) that a resume may change."""
    names = _named(OPERATIONAL, model)
    if model_path(model) == _CONFIG + "ReportingSpec":
        names |= set(WRITERS.names())  # a setting naming a report writer
    return names


def decisive_fields(model: type[BaseModel]) -> set[str]:
    """The fields of `model` named decisive (tests check every field is named once)."""
    return _named(DECISIVE, model)


def decisive_settings(config: RunConfig) -> dict[str, Any]:
    """The settings that decide the rows, as JSON: the detectors as resolved (defaults
    included, so a changed default is seen), the panel, the verdict policy, the statistics."""
    view = {
        "detectors": [
            {**_view(params), "type": cls.name} for cls, params in resolve_detectors(config)
        ],
        "schema_dir": config.schema_dir,
        "evaluator": _view(config.evaluator),
        "reporting": _view(config.reporting),
        "evaluation": _view(config.evaluation),
    }
    jsonable: dict[str, Any] = to_jsonable_python(view, fallback=str)
    return jsonable


def fingerprint(settings: Mapping[str, Any]) -> str:
    """The hash a resume must match."""
    text = json.dumps(settings, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _view(model: BaseModel) -> dict[str, Any]:
    cls = type(model)
    skip = operational_fields(cls)
    out: dict[str, Any] = {}
    for name, info in cls.model_fields.items():
        if name not in skip:
            out[info.alias or name] = _value(getattr(model, name))
    for name, value in (model.model_extra or {}).items():
        out[name] = _value(value)  # pass-through keys (generation settings) are sent as given
    if isinstance(model, ConnectionSpec):
        out["headers"] = {
            k: v for k, v in model.headers.items() if k.lower() not in CREDENTIAL_HEADERS
        }
    return out


def _value(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return _view(value)
    if isinstance(value, list | tuple):
        return [_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _value(v) for k, v in value.items()}
    if isinstance(value, enum.Enum):
        return value.value
    return value


# -- what is kept in the run folder, and what a refusal says ---------------------------------


def secret_values(detectors: Iterable[Detector]) -> list[str]:
    """The run's secrets, whatever their length: markers, judge keys and header values."""
    return [s for d in detectors for s in (*d.secrets(), *credentials_of(d)) if s]


def stored_settings(settings: Mapping[str, Any], secrets: Iterable[str]) -> dict[str, Any]:
    """The settings as written to the run folder: every header value, every text that is a
    secret (a marker, a key) and every text holding one of MIN_SECRET_LENGTH or more
    characters, masked whole. Keys are names the config defines and are kept."""
    values = frozenset(s for s in secrets if s)
    held = tuple(s for s in values if len(s) >= MIN_SECRET_LENGTH)
    masked: dict[str, Any] = _masked(dict(settings), values, held, headers=False)
    return masked


def _masked(value: Any, values: frozenset[str], held: tuple[str, ...], *, headers: bool) -> Any:
    if isinstance(value, str):
        secret = headers or value in values or any(s in value for s in held)
        return HEADER_VALUE_MASK if secret else value
    if isinstance(value, dict):
        return {
            k: _masked(v, values, held, headers=headers or k == "headers") for k, v in value.items()
        }
    if isinstance(value, list):
        return [_masked(v, values, held, headers=headers) for v in value]
    return value


def differences(old: Any, new: Any, path: str = "") -> list[str]:
    """`path: OLD -> NEW` for each setting that differs, depth first, in key order; where
    the `type` of a detector (or anything typed) differs, only that."""
    if isinstance(old, dict) and isinstance(new, dict):
        if "type" in old and "type" in new and old["type"] != new["type"]:
            # Another detector (or connection) in this place: its settings are all other.
            return differences(old["type"], new["type"], f"{path}.type")
        found: list[str] = []
        for key in sorted({*old, *new}, key=str):
            sub = f"{path}.{key}" if path else str(key)
            found += differences(old.get(key, _ABSENT), new.get(key, _ABSENT), sub)
        return found
    if isinstance(old, list) and isinstance(new, list):
        found = []
        for i in range(max(len(old), len(new))):
            a = old[i] if i < len(old) else _ABSENT
            b = new[i] if i < len(new) else _ABSENT
            found += differences(a, b, f"{path}[{i}]")
        return found
    if old == new and type(old) is type(new) or (_number(old) and _number(new) and old == new):
        return []
    return [f"{path or '(settings)'}: {_shown(old)} -> {_shown(new)}"]


class _Absent:
    def __repr__(self) -> str:
        return "(absent)"


_ABSENT = _Absent()


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _shown(value: Any) -> str:
    text = repr(value) if isinstance(value, _Absent | str) or value is None else json.dumps(value)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 1] + "…"


def refusal_detail(kept: Any, now: Mapping[str, Any]) -> str | None:
    """What a refused resume names: the first settings that differ between those the run
    folder kept and this run's (both as `stored_settings` gives them), or None when the
    folder keeps none (written before they were kept)."""
    if not isinstance(kept, dict):
        return None
    found = differences(kept, dict(now))
    if not found:
        return "the difference is in a value the run folder does not keep (a header value or a secret marker)"
    more = len(found) - NAMED_DIFFERENCES
    named = "; ".join(found[:NAMED_DIFFERENCES])
    return named + (f" (and {more} more)" if more > 0 else "")
