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

    def body(self, messages: list[dict[str, str]]) -> bytes:
        # Everything but the messages is fixed per judge, so the dict is built once.
        payload = dict(self._static)
        payload["messages"] = messages
        return dumps_json(payload)

    def read(self, content: bytes) -> Answer:
        raise NotImplementedError


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

    def read(self, content: bytes) -> Answer:
        try:
            data = _loads(content)
            choice = data["choices"][0]
            text = choice["message"]["content"] or ""
            usage = data.get("usage") or {}
            top = None
            if self.logprobs:
                lp = (choice.get("logprobs") or {}).get("content") or []
                if lp:
                    top = {t["token"]: float(t["logprob"]) for t in lp[0].get("top_logprobs") or ()}
            return Answer(
                str(text),
                int(usage.get("prompt_tokens") or 0),
                int(usage.get("completion_tokens") or 0),
                top,
            )
        except Exception as exc:
            raise MalformedResponse(f"malformed response: {type(exc).__name__}") from exc


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

    def read(self, content: bytes) -> Answer:
        try:
            data = _loads(content)
            text = self._text(data) or ""
            top = None
            if self.logprobs:
                lp = data.get("logprobs") or []
                if lp:
                    top = {t["token"]: float(t["logprob"]) for t in lp[0].get("top_logprobs") or ()}
            return Answer(
                str(text),
                int(data.get("prompt_eval_count") or 0),
                int(data.get("eval_count") or 0),
                top,
            )
        except Exception as exc:
            raise MalformedResponse(f"malformed response: {type(exc).__name__}") from exc


PROVIDERS: dict[ConnectionType, type[Provider]] = {
    ConnectionType.OPENAI: OpenAIProvider,
    ConnectionType.OLLAMA: OllamaProvider,
}


def provider_for(spec: JudgeSpec, *, logprobs: bool = False) -> Provider:
    cls = PROVIDERS.get(spec.connection.type)
    if cls is None:
        raise ValueError(
            f"judge {spec.name!r}: connection type {spec.connection.type.value} is not supported "
            f"(supported: {', '.join(t.value for t in PROVIDERS)})"
        )
    return cls(spec, logprobs=logprobs)
