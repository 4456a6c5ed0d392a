"""`LITELLM` judges: `litellm.acompletion` reaches Bedrock, Vertex and the rest
(`pip install 'redjury[litellm]'`); the engine's in-flight limits still apply."""

from __future__ import annotations

import os
from typing import Any

import orjson

from redjury.judges.config import JudgeSpec
from redjury.judges.engine import JudgeCallError, JudgeEngine, Route
from redjury.judges.providers import OpenAIProvider
from redjury.plugins import PROVIDERS

# Stands in for a base URL where LiteLLM picks the provider's own endpoint.
LITELLM_URL_PREFIX = "litellm:"


@PROVIDERS.register
class LiteLLMProvider(OpenAIProvider):
    """The judge's `name` is LiteLLM's model string (`bedrock/...`, `openai/...`); LiteLLM
    reads the provider's credentials from its usual variables unless `api_key_env` names one."""

    connection_type = "LITELLM"

    def __init__(self, spec: JudgeSpec, *, logprobs: bool = False) -> None:
        # LiteLLM fetches a price list from GitHub at import unless told to use its own copy.
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        try:
            import litellm
        except ImportError:
            raise ValueError(
                f"judge {spec.name!r}: connection type LITELLM needs the extra: "
                "pip install 'redjury[litellm]'"
            ) from None
        litellm.suppress_debug_info = True  # its banner on every failure is not ours to print
        self._acompletion = litellm.acompletion
        super().__init__(spec, logprobs=logprobs)
        # Headers go to LiteLLM as extra_headers; it sets content type and auth itself.
        self.extra_headers = dict(spec.connection.headers)
        self.headers = {}

    preflight = False

    def _base_url(self) -> str:
        url = self.spec.connection.base_url
        return url.rstrip("/") if url else LITELLM_URL_PREFIX + self.spec.name

    def _api_key(self) -> str | None:
        # LiteLLM takes the key as an argument, not a header: keep it for `send`.
        self.api_key = super()._api_key()
        return self.api_key

    def _auth_headers(self, key: str) -> dict[str, str]:
        return {}

    async def send(self, engine: JudgeEngine, route: Route, body: bytes) -> bytes:
        payload: dict[str, Any] = orjson.loads(body)
        extra: dict[str, Any] = {"timeout": route.timeout, "num_retries": engine.max_retries}
        if not self.base_url.startswith(LITELLM_URL_PREFIX):
            extra["api_base"] = self.base_url
        if self.api_key:
            extra["api_key"] = self.api_key
        if self.extra_headers:
            extra["extra_headers"] = self.extra_headers
        async with engine.slot(route):
            try:
                response = await self._acompletion(**payload, **extra)
            except Exception as exc:
                raise JudgeCallError(litellm_reason(exc, route.timeout)) from exc
        return orjson.dumps(response.model_dump())


def litellm_reason(exc: Exception, timeout: float) -> str:
    """An abstention reason in the engine's words: timeout, HTTP status or connection error."""
    name = type(exc).__name__
    if "Timeout" in name:
        return f"timeout after {timeout:g}s"
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and status >= 400:
        return f"HTTP {status}"
    return f"connection error: {name}"
