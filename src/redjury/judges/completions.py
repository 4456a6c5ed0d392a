"""Completions-endpoint mode (`scoring.completions: true`): the rendered template is sent as one
raw prompt, for models that expect their own prompt format rather than chat messages."""

from __future__ import annotations

from typing import Any

from redjury.judges.answer_checks import logprob_table
from redjury.judges.config import ConnectionType, JudgeSpec
from redjury.judges.providers import (
    TOP_LOGPROBS,
    OllamaProvider,
    OpenAIProvider,
    Provider,
    provider_for,
)


class OpenAICompletionsProvider(OpenAIProvider):
    """OpenAI-compatible `/completions`: `prompt` in, `choices[0].text` out."""

    def __init__(self, spec: JudgeSpec, *, logprobs: bool = False) -> None:
        super().__init__(spec, logprobs=logprobs)
        self.path = "/completions"
        if logprobs:
            # The legacy completions API takes the number of alternatives in `logprobs`.
            self._static.pop("top_logprobs", None)
            self._static["logprobs"] = TOP_LOGPROBS

    raw_prompt = True

    def _text(self, data: Any) -> Any:
        return data["choices"][0]["text"]

    def _top_logprobs(self, data: Any) -> dict[str, float] | None:
        firsts: Any = (data["choices"][0].get("logprobs") or {}).get("top_logprobs") or []
        if not (firsts and firsts[0]):
            return None
        return logprob_table(firsts[0].items())


class OllamaGenerateProvider(OllamaProvider):
    """Ollama's `/api/generate` with `raw: true`, so Ollama applies no chat template."""

    def __init__(self, spec: JudgeSpec, *, logprobs: bool = False) -> None:
        super().__init__(spec, logprobs=logprobs)
        self.path = "/api/generate"
        self._static["raw"] = True

    raw_prompt = True

    def _text(self, data: Any) -> Any:
        return data["response"]


COMPLETIONS_PROVIDERS: dict[str, type[Provider]] = {
    ConnectionType.OPENAI: OpenAICompletionsProvider,
    ConnectionType.OLLAMA: OllamaGenerateProvider,
}


def completions_provider_for(spec: JudgeSpec, *, logprobs: bool = False) -> Provider:
    return provider_for(
        spec, logprobs=logprobs, table=COMPLETIONS_PROVIDERS, mode="completions mode, "
    )
