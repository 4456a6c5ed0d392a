"""Wire formats of the judge servers: OpenAI-compatible chat completions and Ollama's /api/chat.

A provider turns messages into a request body and a response body into an `Answer`; the
engine owns the HTTP around it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import orjson

from redjury.judges.config import ConnectionType, JudgeSpec

_loads = orjson.loads


def dumps_json(obj: Any, *, sort_keys: bool = False) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS if sort_keys else 0)


OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
OLLAMA_DEFAULT_HOST = "http://localhost:11434"
# Local OpenAI-compatible servers ignore the key but some clients and proxies insist on one.
PLACEHOLDER_API_KEY = "sk-no-key-required"
TOP_LOGPROBS = 5


class MalformedResponse(Exception):
    """The server answered 200 with a body that is not the protocol's response."""


@dataclass(frozen=True, slots=True)
class Answer:
    text: str
    prompt_tokens: int
    completion_tokens: int
    # The first answer token's alternatives, token → logprob; None when not asked or not sent.
    top_logprobs: dict[str, float] | None = None


class Provider:
    """One judge's view of its server: URL, headers, how to build a body and read an answer."""

    models_path: str = "/models"

    def __init__(self, spec: JudgeSpec, *, logprobs: bool = False) -> None:
        self.spec = spec
        self.logprobs = logprobs
        self.base_url = self._base_url()
        self.headers: dict[str, str] = {
            "content-type": "application/json",
            **spec.connection.headers,
        }
        self.secrets: list[str] = [v for v in spec.connection.headers.values() if v]
        key = self._api_key()
        if key is not None:
            self.headers["authorization"] = f"Bearer {key}"
            if key != PLACEHOLDER_API_KEY:
                self.secrets.append(key)
        self.path = ""
        self._static: dict[str, Any] = {}

    def _base_url(self) -> str:
        raise NotImplementedError

    def _api_key(self) -> str | None:
        env = self.spec.connection.api_key_env
        if env is None:
            return None
        key = os.environ.get(env)
        if not key:
            raise ValueError(f"judge {self.spec.name!r}: environment variable {env} is not set")
        return key

    # Completions-endpoint providers send the rendered turns as one raw `prompt`.
    raw_prompt: bool = False

    def body(self, messages: list[dict[str, str]]) -> bytes:
        # Everything but the messages is fixed per judge, so the dict is built once.
        payload = dict(self._static)
        if self.raw_prompt:
            payload["prompt"] = raw_prompt(messages)
        else:
            payload["messages"] = messages
        return dumps_json(payload)

    def read(self, content: bytes) -> Answer:
        """The answer text, token counts and (when asked) first-token logprobs of a reply."""
        try:
            data = _loads(content)
            text = self._text(data) or ""
            prompt_tokens, completion_tokens = self._usage(data)
            top = self._top_logprobs(data) if self.logprobs else None
            return Answer(str(text), int(prompt_tokens or 0), int(completion_tokens or 0), top)
        except Exception as exc:
            raise MalformedResponse(f"malformed response: {type(exc).__name__}") from exc

    # Where each wire format keeps those parts; any lookup error reads as a malformed reply.
    def _text(self, data: Any) -> Any:
        raise NotImplementedError

    def _usage(self, data: Any) -> tuple[Any, Any]:
        raise NotImplementedError

    def _top_logprobs(self, data: Any) -> dict[str, float] | None:
        raise NotImplementedError


def raw_prompt(messages: list[dict[str, str]]) -> str:
    """The chat turns as one text, in order; the template decides how it ends (e.g. `[/INST]`)."""
    return "\n\n".join(m["content"] for m in messages if m["content"])


def _generation(spec: JudgeSpec) -> dict[str, Any]:
    return spec.generation.model_dump(exclude_none=True)


class OpenAIProvider(Provider):
    def __init__(self, spec: JudgeSpec, *, logprobs: bool = False) -> None:
        super().__init__(spec, logprobs=logprobs)
        self.path = "/chat/completions"
        static: dict[str, Any] = {"model": spec.name, **_generation(spec), **spec.options}
        if logprobs:
            static["logprobs"] = True
            static["top_logprobs"] = TOP_LOGPROBS
        self._static = static

    def _base_url(self) -> str:
        url = self.spec.connection.base_url
        if not url:
            return OPENAI_DEFAULT_BASE_URL
        url = url.rstrip("/")
        # `http://localhost:8000` means the server root; its OpenAI API lives under /v1.
        if urlsplit(url).path in ("", "/"):
            url += "/v1"
        return url

    def _api_key(self) -> str | None:
        key = super()._api_key()
        if key is not None:
            return key
        if self.spec.connection.base_url:
            return PLACEHOLDER_API_KEY
        key = os.environ.get("OPENAI_API_KEY")
        if not key:
            raise ValueError(
                f"judge {self.spec.name!r}: no base_url and no API key; set api_key_env "
                "(or OPENAI_API_KEY) or point base_url at a local server"
            )
        return key

    def _text(self, data: Any) -> Any:
        return data["choices"][0]["message"]["content"]

    def _usage(self, data: Any) -> tuple[Any, Any]:
        usage = data.get("usage") or {}
        return usage.get("prompt_tokens"), usage.get("completion_tokens")

    def _top_logprobs(self, data: Any) -> dict[str, float] | None:
        lp = (data["choices"][0].get("logprobs") or {}).get("content") or []
        if not lp:
            return None
        return {t["token"]: float(t["logprob"]) for t in lp[0].get("top_logprobs") or ()}


def ollama_host() -> str:
    """$OLLAMA_HOST as Ollama reads it (scheme and port optional), else localhost:11434."""
    host = os.environ.get("OLLAMA_HOST", "").strip()
    if not host:
        return OLLAMA_DEFAULT_HOST
    if "://" not in host:
        host = "http://" + host
    parts = urlsplit(host)
    if parts.port is None:
        host = f"{parts.scheme}://{parts.hostname}:11434{parts.path}"
    return host.rstrip("/")


class OllamaProvider(Provider):
    models_path = "/api/tags"

    def __init__(self, spec: JudgeSpec, *, logprobs: bool = False) -> None:
        super().__init__(spec, logprobs=logprobs)
        self.path = "/api/chat"
        gen = _generation(spec)
        options: dict[str, Any] = {}
        fmt = gen.pop("response_format", None)
        if "max_tokens" in gen:
            options["num_predict"] = gen.pop("max_tokens")
        options.update(gen)
        options.update(spec.options)
        static: dict[str, Any] = {"model": spec.name, "stream": False, "options": options}
        if fmt is not None:
            # Ollama's `format` takes a JSON schema itself, or "json".
            schema = (fmt.get("json_schema") or {}).get("schema")
            static["format"] = schema if schema is not None else "json"
        if logprobs:
            static["logprobs"] = True
            static["top_logprobs"] = TOP_LOGPROBS
        self._static = static

    def _base_url(self) -> str:
        url = self.spec.connection.base_url
        return url.rstrip("/") if url else ollama_host()

    def _text(self, data: Any) -> Any:
        return data["message"]["content"]

    def _usage(self, data: Any) -> tuple[Any, Any]:
        return data.get("prompt_eval_count"), data.get("eval_count")

    def _top_logprobs(self, data: Any) -> dict[str, float] | None:
        lp = data.get("logprobs") or []
        if not lp:
            return None
        return {t["token"]: float(t["logprob"]) for t in lp[0].get("top_logprobs") or ()}


PROVIDERS: dict[ConnectionType, type[Provider]] = {
    ConnectionType.OPENAI: OpenAIProvider,
    ConnectionType.OLLAMA: OllamaProvider,
}


def provider_for(
    spec: JudgeSpec,
    *,
    logprobs: bool = False,
    table: dict[ConnectionType, type[Provider]] | None = None,
    mode: str = "",
) -> Provider:
    """The provider class for the judge's connection type, from `table` (chat by default)."""
    classes = PROVIDERS if table is None else table
    cls = classes.get(spec.connection.type)
    if cls is None:
        raise ValueError(
            f"judge {spec.name!r}: {mode}connection type {spec.connection.type.value} is not "
            f"supported (supported: {', '.join(t.value for t in classes)})"
        )
    return cls(spec, logprobs=logprobs)
