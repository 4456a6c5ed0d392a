"""Wire formats of the judge servers: OpenAI-compatible chat completions, Ollama's /api/chat,
Azure OpenAI, Anthropic's Messages API, and LiteLLM (an optional extra) for the rest.

A provider turns messages into a request body and a response body into an `Answer`; the
engine owns the HTTP around it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import quote, urlsplit

import orjson

from redjury.errors import RedjuryError
from redjury.judges.answer_checks import InvalidAnswer, logprob_table, token_count
from redjury.judges.config import JudgeSpec
from redjury.judges.config_checks import check_no_query
from redjury.plugins import PROVIDERS

if TYPE_CHECKING:
    from redjury.judges.engine import JudgeEngine, Route

_loads = orjson.loads


def dumps_json(obj: Any, *, sort_keys: bool = False) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS if sort_keys else 0)


OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
OLLAMA_DEFAULT_HOST = "http://localhost:11434"
# Local OpenAI-compatible servers ignore the key but some clients and proxies insist on one.
PLACEHOLDER_API_KEY = "sk-no-key-required"
TOP_LOGPROBS = 5
# Control characters (CR and LF among them) that no header value may hold.
_HEADER_UNSAFE = re.compile(r"[\x00-\x1f\x7f]")


class MalformedResponse(RedjuryError):
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

    # The `connection.type` a config names it by (`OPENAI`); the registry's key.
    connection_type: ClassVar[str] = ""
    models_path: str = "/models"

    def __init__(self, spec: JudgeSpec, *, logprobs: bool = False) -> None:
        self.spec = spec
        self.logprobs = logprobs
        # A query in the URL (from $OLLAMA_HOST, say) may hold a key that reports would show.
        self.base_url = check_no_query(self._base_url()) or ""
        self.headers: dict[str, str] = {
            "content-type": "application/json",
            **spec.connection.headers,
        }
        self.secrets: list[str] = [v for v in spec.connection.headers.values() if v]
        key = self._api_key()
        if key is not None:
            self.headers.update(self._auth_headers(key))
            if key != PLACEHOLDER_API_KEY:
                self.secrets.append(key)
        self.path = ""
        self._static: dict[str, Any] = {}
        # `connection.batch`: requests go through the judge's batch queue (batches.py).
        self.batch_queue: Any = None

    def _auth_headers(self, key: str) -> dict[str, str]:
        return {"authorization": f"Bearer {key}"}

    # Preflight: whether the model listing names judge models (Azure's lists no deployments),
    # and whether there is an HTTP server to ask at all (LiteLLM's own routing has none).
    listing_names_models: bool = True
    preflight: bool = True

    def probe_body(self) -> bytes:
        """A one-token request: the preflight's check where the server has no model listing."""
        payload = dict(self._static)
        payload["max_tokens"] = 1
        payload.pop("logprobs", None)
        payload.pop("top_logprobs", None)
        return self._with_probe_prompt(payload)

    def _with_probe_prompt(self, payload: dict[str, Any]) -> bytes:
        if self.raw_prompt:
            payload["prompt"] = "Say OK."
        else:
            payload["messages"] = [{"role": "user", "content": "Say OK."}]
        return dumps_json(payload)

    async def send(self, engine: JudgeEngine, route: Route, body: bytes) -> bytes:
        """Send one request body; the reply body (LiteLLM's provider bypasses the HTTP, a
        batch judge's queue answers once its batch has ended)."""
        if self.batch_queue is not None:
            return bytes(await self.batch_queue.send(body))
        return await engine.post(route, body)

    def _base_url(self) -> str:
        raise NotImplementedError

    def _api_key(self) -> str | None:
        env = self.spec.connection.api_key_env
        if env is None:
            return None
        key = env_key(self.spec, env)
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
            text = self._text(data)
            if text is not None and not isinstance(text, str):
                raise InvalidAnswer("the answer text is not a string")
            prompt_tokens, completion_tokens = self._usage(data)
            top = self._top_logprobs(data) if self.logprobs else None
            return Answer(
                text or "",
                token_count(prompt_tokens, "the prompt token count"),
                token_count(completion_tokens, "the completion token count"),
                top,
            )
        except InvalidAnswer as exc:
            raise MalformedResponse(f"malformed response: {exc}") from exc
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


@PROVIDERS.register
class OpenAIProvider(Provider):
    """Any OpenAI-compatible chat server (`/chat/completions`): OpenAI, vLLM, llama.cpp, …"""

    connection_type = "OPENAI"

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
        key = env_key(self.spec, "OPENAI_API_KEY")
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
        return logprob_table((t["token"], t["logprob"]) for t in lp[0].get("top_logprobs") or ())


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


@PROVIDERS.register
class OllamaProvider(Provider):
    """Ollama's native chat endpoint (`/api/chat`)."""

    connection_type = "OLLAMA"
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

    def probe_body(self) -> bytes:
        payload = dict(self._static)
        payload["options"] = {**payload.get("options", {}), "num_predict": 1}
        payload.pop("format", None)
        payload.pop("logprobs", None)
        payload.pop("top_logprobs", None)
        return self._with_probe_prompt(payload)

    def _text(self, data: Any) -> Any:
        return data["message"]["content"]

    def _usage(self, data: Any) -> tuple[Any, Any]:
        return data.get("prompt_eval_count"), data.get("eval_count")

    def _top_logprobs(self, data: Any) -> dict[str, float] | None:
        lp = data.get("logprobs") or []
        if not lp:
            return None
        return logprob_table((t["token"], t["logprob"]) for t in lp[0].get("top_logprobs") or ())


AZURE_API_VERSION = "2024-10-21"


@PROVIDERS.register
class AzureOpenAIProvider(OpenAIProvider):
    """Azure OpenAI: the deployment in the path, `api-version` in the query, an `api-key` header."""

    connection_type = "AZURE_OPENAI"

    def __init__(self, spec: JudgeSpec, *, logprobs: bool = False) -> None:
        super().__init__(spec, logprobs=logprobs)
        conn = spec.connection
        version = quote(conn.api_version or AZURE_API_VERSION, safe="")
        deployment = quote(conn.deployment or spec.name, safe="")
        self.path = f"/openai/deployments/{deployment}/chat/completions?api-version={version}"
        # Azure lists its models, not the deployments: the listing checks reachability and key.
        self.models_path = f"/openai/models?api-version={version}"
        # The deployment decides the model; Azure ignores a `model` in the body.
        self._static.pop("model", None)

    listing_names_models = False

    def _base_url(self) -> str:
        url = self.spec.connection.base_url
        if not url:
            raise ValueError(
                f"judge {self.spec.name!r}: AZURE_OPENAI needs base_url "
                "(https://RESOURCE.openai.azure.com)"
            )
        url = url.rstrip("/")
        return url.removesuffix("/openai")

    def _api_key(self) -> str | None:
        return _key_from(self.spec, "AZURE_OPENAI_API_KEY")

    def _auth_headers(self, key: str) -> dict[str, str]:
        return {"api-key": key}


ANTHROPIC_DEFAULT_BASE_URL = "https://api.anthropic.com/v1"
ANTHROPIC_VERSION = "2023-06-01"
# The Messages API requires max_tokens; a verdict never needs more.
ANTHROPIC_MAX_TOKENS = 1024


@PROVIDERS.register
class AnthropicProvider(Provider):
    """Anthropic's Messages API: `x-api-key`, `anthropic-version`, a top-level `system`."""

    connection_type = "ANTHROPIC"

    def __init__(self, spec: JudgeSpec, *, logprobs: bool = False) -> None:
        if logprobs:
            raise ValueError(f"judge {spec.name!r}: ANTHROPIC returns no logprobs")
        super().__init__(spec, logprobs=logprobs)
        self.headers["anthropic-version"] = spec.connection.api_version or ANTHROPIC_VERSION
        self.path = "/messages"
        gen = _generation(spec)
        # No seed and no response_format in the Messages API; stop words have another name.
        gen.pop("seed", None)
        gen.pop("response_format", None)
        stop = gen.pop("stop", None)
        static: dict[str, Any] = {"model": spec.name, **gen}
        static.setdefault("max_tokens", ANTHROPIC_MAX_TOKENS)
        if stop:
            static["stop_sequences"] = stop
        static.update(spec.options)
        self._static = static

    def _base_url(self) -> str:
        url = (self.spec.connection.base_url or ANTHROPIC_DEFAULT_BASE_URL).rstrip("/")
        if urlsplit(url).path in ("", "/"):
            url += "/v1"
        return url

    def _api_key(self) -> str | None:
        if self.spec.connection.api_key_env is None and self.spec.connection.base_url:
            return env_key(self.spec, "ANTHROPIC_API_KEY") or None
        return _key_from(self.spec, "ANTHROPIC_API_KEY")

    def _auth_headers(self, key: str) -> dict[str, str]:
        return {"x-api-key": key}

    def body(self, messages: list[dict[str, str]]) -> bytes:
        payload = dict(self._static)
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        if system:
            payload["system"] = system
        payload["messages"] = [m for m in messages if m["role"] != "system"]
        return dumps_json(payload)

    def _text(self, data: Any) -> Any:
        return "".join(b["text"] for b in data["content"] if b.get("type") == "text")

    def _usage(self, data: Any) -> tuple[Any, Any]:
        usage = data.get("usage") or {}
        return usage.get("input_tokens"), usage.get("output_tokens")


def env_key(spec: JudgeSpec, env: str) -> str | None:
    """An API key from the environment; ValueError naming the variable (never the value)
    when it could not travel in a header: CR or LF would inject headers of its own."""
    key = os.environ.get(env)
    if key and (_HEADER_UNSAFE.search(key) or not _latin1(key)):
        raise ValueError(
            f"judge {spec.name!r}: environment variable {env} holds a line break, another "
            "control character or text outside latin-1, which a header cannot carry"
        )
    return key


def _latin1(text: str) -> bool:
    try:
        text.encode("latin-1")
    except UnicodeEncodeError:
        return False
    return True


def _key_from(spec: JudgeSpec, default_env: str) -> str:
    env = spec.connection.api_key_env or default_env
    key = env_key(spec, env)
    if not key:
        raise ValueError(f"judge {spec.name!r}: environment variable {env} is not set")
    return key


def provider_for(
    spec: JudgeSpec,
    *,
    logprobs: bool = False,
    table: dict[str, type[Provider]] | None = None,
    mode: str = "",
) -> Provider:
    """The provider class for the judge's connection type, from `table` (chat by default)."""
    kind = str(spec.connection.type)
    cls = PROVIDERS.find(kind) if table is None else table.get(kind)
    if cls is None:
        supported = PROVIDERS.names() if table is None else [str(t) for t in table]
        raise ValueError(
            f"judge {spec.name!r}: {mode}connection type {kind} is not "
            f"supported (supported: {', '.join(supported)})"
        )
    return cls(spec, logprobs=logprobs)
