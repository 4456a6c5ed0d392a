"""The records redjury reads: Attempt and its parts (R1)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class Turn(BaseModel):
    """One turn of a transcript."""

    model_config = ConfigDict(extra="ignore")

    role: str
    content: str | None = None


class Usage(BaseModel):
    """Token use the target reported for an attempt."""

    model_config = ConfigDict(extra="ignore")

    prompt_tokens: int | None = Field(default=None, ge=0)
    completion_tokens: int | None = Field(default=None, ge=0)
    total_tokens: int | None = Field(default=None, ge=0)

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
    after the last user turn.
    """

    model_config = ConfigDict(extra="ignore")

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
    latency_ms: float | None = Field(default=None, ge=0)
    usage: Usage | None = None
    notes: dict[str, Any] = Field(default_factory=dict)
    run_id: str | None = None
    seq: int | None = None
    generator: str | None = None
    # Scores already present in the input (a garak report's detector_results).
    detector_results: dict[str, list[float | None]] = Field(default_factory=dict)
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

    @model_validator(mode="before")
    @classmethod
    def _single_output(cls, data: Any) -> Any:
        if isinstance(data, dict) and "output" in data and "outputs" not in data:
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
        return self

    @property
    def triggers(self) -> list[str]:
        """Canary markers planted for this attempt (`notes.triggers`)."""
        raw = self.notes.get("triggers") or []
        if isinstance(raw, str):
            return [raw]
        return [str(t) for t in raw if t]

    def assistant_turns(self) -> list[str | None]:
        """Every assistant turn of the transcript, or the outputs when there is none."""
        if self.messages:
            return [t.content for t in self.messages if t.role == "assistant"]
        return list(self.outputs)
