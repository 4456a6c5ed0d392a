"""Completions-endpoint mode (`scoring.completions: true`): the rendered template is sent as one
raw prompt, for models that expect their own prompt format rather than chat messages."""

from __future__ import annotations

from typing import Any

from redjury.judges.config import ConnectionType, JudgeSpec
from redjury.judges.providers import (
    TOP_LOGPROBS,
    Answer,
    MalformedResponse,
    OllamaProvider,
    OpenAIProvider,
    Provider,
    _loads,
    dumps_json,
)


def raw_prompt(messages: list[dict[str, str]]) -> str:
    """The chat turns as one text, in order; the template decides how it ends (e.g. `[/INST]`)."""
    return "\n\n".join(m["content"] for m in messages if m["content"])


class OpenAICompletionsProvider(OpenAIProvider):
    """OpenAI-compatible `/completions`: `prompt` in, `choices[0].text` out."""

    def __init__(self, spec: JudgeSpec, *, logprobs: bool = False) -> None:
        super().__init__(spec, logprobs=logprobs)
        self.path = "/completions"
        if logprobs:
            # The legacy completions API takes the number of alternatives in `logprobs`.
            self._static.pop("top_logprobs", None)
            self._static["logprobs"] = TOP_LOGPROBS

    def body(self, messages: list[dict[str, str]]) -> bytes:
        payload = dict(self._static)
        payload["prompt"] = raw_prompt(messages)
        return dumps_json(payload)

    def read(self, content: bytes) -> Answer:
        try:
            data = _loads(content)
            choice = data["choices"][0]
            usage = data.get("usage") or {}
            top = None
            if self.logprobs:
                firsts: Any = (choice.get("logprobs") or {}).get("top_logprobs") or []
                if firsts and firsts[0]:
                    top = {str(t): float(lp) for t, lp in firsts[0].items()}
            return Answer(
                str(choice["text"] or ""),
                int(usage.get("prompt_tokens") or 0),
                int(usage.get("completion_tokens") or 0),
                top,
            )
        except Exception as exc:
            raise MalformedResponse(f"malformed response: {type(exc).__name__}") from exc


class OllamaGenerateProvider(OllamaProvider):
    """Ollama's `/api/generate` with `raw: true`, so Ollama applies no chat template."""

    def __init__(self, spec: JudgeSpec, *, logprobs: bool = False) -> None:
        super().__init__(spec, logprobs=logprobs)
        self.path = "/api/generate"
        self._static["raw"] = True

    def body(self, messages: list[dict[str, str]]) -> bytes:
        payload = dict(self._static)
        payload["prompt"] = raw_prompt(messages)
        return dumps_json(payload)

    def _text(self, data: Any) -> Any:
        return data["response"]


COMPLETIONS_PROVIDERS: dict[ConnectionType, type[Provider]] = {
    ConnectionType.OPENAI: OpenAICompletionsProvider,
    ConnectionType.OLLAMA: OllamaGenerateProvider,
}


def completions_provider_for(spec: JudgeSpec, *, logprobs: bool = False) -> Provider:
    cls = COMPLETIONS_PROVIDERS.get(spec.connection.type)
    if cls is None:
        raise ValueError(
            f"judge {spec.name!r}: completions mode is not supported for connection type "
            f"{spec.connection.type.value}"
        )
    return cls(spec, logprobs=logprobs)
