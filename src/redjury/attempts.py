"""The records redjury reads: Attempt and its parts (R1)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from redjury.errors import RedjuryError

# A score carried in the input: a number in [0, 1] (JSON true, or "0.5" as a string, is not).
Score = Annotated[float, Field(ge=0, le=1, strict=True)]


class FieldError(RedjuryError, ValueError):
    """A problem one check across fields found, naming the field (`messages.2.role`)."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class Turn(BaseModel):
    """One turn of a transcript; the role in any case (`Assistant` is `assistant`)."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | None = None

    @field_validator("role", mode="before")
    @classmethod
    def _role_in_any_case(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value


class Usage(BaseModel):
    """Token use the target reported for an attempt."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    prompt_tokens: int | None = Field(default=None, ge=0, strict=True)
    completion_tokens: int | None = Field(default=None, ge=0, strict=True)
    total_tokens: int | None = Field(default=None, ge=0, strict=True)

    @model_validator(mode="after")
    def _fill_total(self) -> Usage:
        if self.total_tokens is None and (
            self.prompt_tokens is not None or self.completion_tokens is not None
        ):
            self.total_tokens = (self.prompt_tokens or 0) + (self.completion_tokens or 0)
        return self


class Attempt(BaseModel):
    """One recorded attack or evaluation attempt: what was asked and what came back.

    `outputs` holds one entry per generation (None where the target produced nothing).
    With a `messages` transcript and no `outputs`, the outputs are the assistant turns
    after the last user turn. Numbers are strict (`"12"` is not a number), and scores
    carried in `detector_results` are null or in [0, 1], one per output.
    """

    model_config = ConfigDict(extra="ignore", defer_build=True)

    id: str = Field(min_length=1)
    probe: str = "default"
    goal: str | None = None
    prompt: str | None = None
    outputs: list[str | None] = Field(default_factory=list)
    messages: list[Turn] | None = None
    intent: str | None = None
    hazard: str | None = None
    goal_context: str | None = None
    context: list[str] | None = None
    source: str | None = None
    expected: str | None = None
    latency_ms: float | None = Field(default=None, ge=0, strict=True)
    usage: Usage | None = None
    notes: dict[str, Any] = Field(default_factory=dict)
    run_id: str | None = None
    # garak's attempt number; bounded as a report's JSON writer writes integers.
    seq: int | None = Field(default=None, strict=True, ge=-(2**63), lt=2**63)
    generator: str | None = None
    # Scores already present in the input (a garak report's detector_results).
    detector_results: dict[str, list[Score | None]] = Field(default_factory=dict)
    # What the source tool wrote, where redjury reads it differently: a garak report's
    # `prompt` (the whole conversation) and `outputs` (Message objects) as written, and its
    # `uuid` where a merged report gives several attempts the same one. The hitlog repeats
    # them as the source tool's own hitlog does.
    source_record: dict[str, Any] | None = None

    @field_validator("id", mode="before")
    @classmethod
    def _id_as_text(cls, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        return value

    @field_validator("context", mode="before")
    @classmethod
    def _context_as_list(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [value]
        return value

    @field_validator("notes")
    @classmethod
    def _triggers_are_text(cls, notes: dict[str, Any]) -> dict[str, Any]:
        raw = notes.get("triggers") if notes else None
        if raw is None or type(raw) is str:
            return notes
        if type(raw) is not list:
            raise FieldError("notes.triggers", "a string or a list of strings (canary markers)")
        for i, marker in enumerate(raw):
            if marker is not None and type(marker) is not str:
                raise FieldError(f"notes.triggers.{i}", "a canary marker is a string")
        return notes

    @model_validator(mode="before")
    @classmethod
    def _single_output(cls, data: Any) -> Any:
        if isinstance(data, dict) and "output" in data:
            if "outputs" in data:
                raise FieldError("output", "give `output` or `outputs`, not both")
            data = dict(data)
            data["outputs"] = [data.pop("output")]
        return data

    @model_validator(mode="after")
    def _outputs_from_transcript(self) -> Attempt:
        if not self.outputs and self.messages:
            last_user = max(
                (i for i, t in enumerate(self.messages) if t.role == "user"), default=-1
            )
            self.outputs = [
                t.content for t in self.messages[last_user + 1 :] if t.role == "assistant"
            ]
        if self.detector_results:
            self._one_score_per_output()
        return self

    def _one_score_per_output(self) -> None:
        n = len(self.outputs)
        for name, scores in self.detector_results.items():
            if len(scores) != n:
                raise FieldError(
                    f"detector_results.{name}",
                    f"{_count(len(scores), 'score')} for {_count(n, 'output')}: give one score (or null) per output",
                )

    @property
    def triggers(self) -> list[str]:
        """Canary markers planted for this attempt (`notes.triggers`); empty ones skipped."""
        raw = self.notes.get("triggers") or []
        if isinstance(raw, str):
            return [raw]
        return [t for t in raw if t]

    def assistant_turns(self) -> list[str | None]:
        """Every assistant turn of the transcript, or the outputs when there is none."""
        if self.messages:
            return [t.content for t in self.messages if t.role == "assistant"]
        return list(self.outputs)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


# The fields `_plain_fields` checks: those `garak_attempt_fields` gives, no more, no fewer.
_CHECKED_FIELDS = frozenset(
    (
        "id",
        "probe",
        "goal",
        "prompt",
        "outputs",
        "notes",
        "seq",
        "run_id",
        "intent",
        "detector_results",
        "generator",
        "source_record",
    )
)
# Every field in the model's order (the order its validation gives `__dict__`); those not
# checked keep their default, None (a test holds every such default to None).
_ALL_FIELDS_UNSET: dict[str, Any] = dict.fromkeys(Attempt.model_fields)
_OPTIONAL_TEXT = ("goal", "prompt", "run_id", "intent", "generator")
_SEQ_BOUND = 2**63


def checked_attempt(fields: dict[str, Any]) -> Attempt | None:
    """The Attempt `Attempt.model_validate(fields)` would give, built without pydantic's
    validation where every field of a garak-mapped record already has the exact type and
    value the model keeps as it is (a quarter of the cost); None for anything else (a
    missing or extra field, an integer score, a bad value), which then takes the validation
    that names the problem. A report's attempts pass here as a rule."""
    if not _plain_fields(fields):
        return None
    attempt = object.__new__(Attempt)
    values = _ALL_FIELDS_UNSET.copy()
    values.update(fields)
    object.__setattr__(attempt, "__dict__", values)
    object.__setattr__(attempt, "__pydantic_fields_set__", set(fields))
    object.__setattr__(attempt, "__pydantic_extra__", None)
    object.__setattr__(attempt, "__pydantic_private__", None)
    return attempt


def _plain_fields(fields: dict[str, Any]) -> bool:
    """Whether `fields` holds exactly the fields a garak row maps onto, each as the model
    keeps it (no coercion, no validator that would change or refuse it)."""
    if fields.keys() != _CHECKED_FIELDS:
        return False
    attempt_id = fields["id"]
    if type(attempt_id) is not str or not attempt_id or type(fields["probe"]) is not str:
        return False
    for name in _OPTIONAL_TEXT:
        value = fields[name]
        if value is not None and type(value) is not str:
            return False
    seq = fields["seq"]
    if seq is not None and (type(seq) is not int or not -_SEQ_BOUND <= seq < _SEQ_BOUND):
        return False
    source = fields["source_record"]
    if source is not None and type(source) is not dict:
        return False
    outputs = fields["outputs"]
    if type(outputs) is not list or not all(o is None or type(o) is str for o in outputs):
        return False
    return _plain_notes(fields["notes"]) and _plain_scores(fields["detector_results"], len(outputs))


def _plain_notes(notes: Any) -> bool:
    if type(notes) is not dict:
        return False
    triggers = notes.get("triggers")
    if triggers is None or type(triggers) is str:
        return True
    return type(triggers) is list and all(t is None or type(t) is str for t in triggers)


def _plain_scores(results: Any, outputs: int) -> bool:
    if type(results) is not dict:
        return False
    for name, scores in results.items():
        if type(name) is not str or type(scores) is not list or len(scores) != outputs:
            return False
        for score in scores:
            # A float in [0, 1] (NaN fails both comparisons); an int is made a float by
            # the model, so it takes the validation.
            if score is not None and (type(score) is not float or not 0.0 <= score <= 1.0):
                return False
    return True
