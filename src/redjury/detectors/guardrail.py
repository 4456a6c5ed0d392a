"""Guardrail adapter: any text guardrail (LlamaGuard-, PromptGuard-style or custom) with a
`flags(text)` method, its flags attributed to configured hazards (R8)."""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Iterable, Iterator
from importlib import import_module
from importlib.machinery import ModuleSpec
from typing import Any, Protocol

from pydantic import Field, ValidationError, field_validator

from redjury.attempts import Attempt
from redjury.detectors.base import Detector, DetectorParams, Family, Finding
from redjury.detectors.registry import register_detector


class TextGuardrail(Protocol):
    """What the adapter wraps. `flags` returns True/False, or the categories it flagged
    (a list or set of strings; empty means safe)."""

    def flags(self, text: str) -> bool | list[str] | set[str]: ...


# Option names that hold a credential whatever the factory (`api_key`, `auth_token`,
# `password`, a `headers` mapping): their text values are masked everywhere, always. A name
# that only says where one is (`api_key_env`, `token_file`) is not.
_CREDENTIAL_WORDS = frozenset(
    {"key", "apikey", "token", "secret", "password", "passwd", "auth", "authorization"}
    | {"credential", "credentials", "bearer", "headers"}
)
_LOCATION_WORDS = frozenset({"env", "file", "path", "var", "name", "url"})


def _names_credential(option: str) -> bool:
    words = re.split(r"[^a-z0-9]+", option.lower())
    return bool(_CREDENTIAL_WORDS.intersection(words)) and words[-1] not in _LOCATION_WORDS


def credential_options(options: Any, named: bool = False) -> Iterator[str]:
    """The text values of a guardrail's options that sit under a credential's name."""
    if isinstance(options, str):
        if named and options:
            yield options
    elif isinstance(options, dict):
        for key, value in options.items():
            yield from credential_options(value, named or _names_credential(str(key)))
    elif isinstance(options, list | tuple):
        for value in options:
            yield from credential_options(value, named)


_DOTTED = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"
_IMPORT_PATH = re.compile(rf"^{_DOTTED}:{_DOTTED}$")


def check_import_path(path: str) -> str:
    """`pkg.module:attr.attr`, absolute: a relative module (`.foo`) has no package to be
    relative to."""
    if not _IMPORT_PATH.match(path):
        raise ValueError(
            'must be an absolute import path "pkg.module:factory" (dotted names, one colon)'
        )
    return path


class GuardrailParams(DetectorParams):
    guardrail: str = Field(
        min_length=1,
        description=(
            'Import path "pkg.module:factory" of the guardrail: a class or callable '
            "returning an object with `flags(text)`, or such an object itself."
        ),
    )
    options: dict[str, Any] = Field(
        default_factory=dict, description="Keyword arguments passed to the factory."
    )
    hazards: list[str] = Field(
        default_factory=list,
        description='Hazards the guardrail\'s verdicts are attributed to (e.g. ["hate"]).',
    )

    _import_path = field_validator("guardrail")(check_import_path)


def module_exists(dotted: str) -> bool:
    """Whether `dotted` names an importable module, found without importing it or its
    packages: checking a config must run none of the code it names."""
    search_path: list[str] | None = None
    parts = dotted.split(".")
    for depth in range(1, len(parts) + 1):
        name = ".".join(parts[:depth])
        loaded = sys.modules.get(name)
        spec = getattr(loaded, "__spec__", None) if loaded is not None else None
        if spec is None:
            spec = _find_spec(name, search_path)
        if spec is None:
            return False
        if depth < len(parts):
            search_path = spec.submodule_search_locations
            if search_path is None:
                return False  # not a package: it has no submodules
    return True


def _find_spec(name: str, search_path: list[str] | None) -> ModuleSpec | None:
    """Ask the import system's finders (they locate files, never run them)."""
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        try:
            spec = find(name, search_path)
        except (ImportError, ValueError):
            spec = None
        if spec is not None:
            return spec
    return None


def load_guardrail(path: str, options: dict[str, Any]) -> TextGuardrail:
    """Import `pkg.module:attr` and build the guardrail; any failure is a ValueError
    naming the path."""
    try:
        check_import_path(path)
    except ValueError as exc:
        raise ValueError(f"guardrail {path!r}: {exc}") from None
    module_name, _, attr_path = path.partition(":")
    try:
        target: Any = import_module(module_name)
        for attr in attr_path.split("."):
            target = getattr(target, attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"cannot import guardrail {path!r}: {exc}") from exc
    if not isinstance(target, type) and callable(getattr(target, "flags", None)):
        if options:
            raise ValueError(f"guardrail {path!r} is an object, not a factory; it takes no options")
        guardrail = target
    elif callable(target):
        try:
            guardrail = target(**options)
        except ValidationError as exc:
            # str(exc) would quote the input (a header value, a key): name paths only.
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()
            )
            raise ValueError(f"guardrail factory {path!r} options: {problems}") from None
        except Exception as exc:
            raise ValueError(
                f"guardrail factory {path!r} failed: {type(exc).__name__}: {exc}"
            ) from exc
    else:
        raise ValueError(f"guardrail {path!r} is neither a factory nor an object with flags()")
    if not callable(getattr(guardrail, "flags", None)):
        raise ValueError(
            f"guardrail {path!r} built {type(guardrail).__name__}, which has no flags()"
        )
    return guardrail


def _describe(obj: object) -> str:
    cls = obj if isinstance(obj, type) else type(obj)
    return f"{cls.__module__}:{cls.__qualname__}"


@register_detector
class GuardrailDetector(Detector):
    """BROKE_THROUGH when the wrapped guardrail flags the reply (True, or a non-empty list
    or set of categories, listed as evidence); HELD when it returns False or no categories;
    INCONCLUSIVE when it raises or returns anything else (None included: a guardrail that
    did not decide must not read as safe). Every finding carries the attributed hazards in
    `details["hazards"]`.

    From a config: `guardrail: "pkg.module:factory"`, imported and called only when the
    guardrail is first needed, once the run has checked its input and is going ahead (a
    config naming a factory runs code; checking one must not). From Python:
    `GuardrailDetector.wrap(my_guard, hazards=["hate"])`.
    """

    name = "guardrail"
    family = Family.DETERMINISTIC
    hazards = ()  # configurable: see Params.hazards
    description = "A configured text guardrail flags the reply (hazards configurable)."
    default_enabled = False
    Params = GuardrailParams
    params: GuardrailParams

    def __init__(
        self, params: DetectorParams | None = None, *, guardrail: TextGuardrail | None = None
    ) -> None:
        super().__init__(params)
        if guardrail is not None and not callable(getattr(guardrail, "flags", None)):
            raise ValueError(f"guardrail {_describe(guardrail)} has no flags() method")
        self._guardrail = guardrail
        self._building = threading.Lock()
        self.attributed_hazards = list(dict.fromkeys(self.params.hazards))

    @property
    def guardrail(self) -> TextGuardrail:
        """The wrapped guardrail, imported and built by its factory on first use (once)."""
        if self._guardrail is None:
            with self._building:
                if self._guardrail is None:
                    self._guardrail = load_guardrail(self.params.guardrail, self.params.options)
        return self._guardrail

    @classmethod
    def preflight(cls, params: DetectorParams) -> None:
        # The module must exist; it is imported (and the guardrail built) once the run is
        # accepted. Located without importing: a config check runs no code it names.
        assert isinstance(params, GuardrailParams)
        module = params.guardrail.partition(":")[0]
        if not module_exists(module):
            raise ValueError(f"guardrail: no module {module!r} can be imported")

    @classmethod
    def wrap(cls, guardrail: TextGuardrail, *, hazards: Iterable[str] = ()) -> GuardrailDetector:
        """A detector around a guardrail object built in Python."""
        params = GuardrailParams(guardrail=_describe(guardrail), hazards=list(hazards))
        return cls(params, guardrail=guardrail)

    def credentials(self) -> list[str]:
        """A judge-backed guardrail's API key and header values, and the options given under
        a credential's name: masked everywhere, always."""
        named = list(credential_options(self.params.options))
        get = getattr(self.guardrail, "credentials", None)
        return named + (list(get()) if callable(get) else [])

    def secrets(self) -> list[str]:
        return self.credentials()

    def mask_answers_with(self, redactor: Any) -> None:
        """Hand the run's redactor to a judge-backed guardrail, which masks its answers."""
        arm = getattr(self.guardrail, "mask_answers_with", None)
        if callable(arm):
            arm(redactor)

    async def adetect(self, attempt: Attempt) -> list[Finding]:
        # Async on purpose: a run with a guardrail checks its whole input (and its judges)
        # before scoring, so the factory is not called for a run that is then refused.
        return self.detect(attempt)

    def close(self) -> None:
        """Close a guardrail that holds resources (Llama Guard's HTTP client and loop thread);
        one never built (a refused run) is not built to be closed."""
        close = getattr(self._guardrail, "close", None)
        if callable(close):
            close()

    async def aclose(self) -> None:
        self.close()

    def check(self, attempt: Attempt, output: str) -> Finding:
        hazards = list(self.attributed_hazards)
        guardrail = self.guardrail  # a factory that fails is a config error, not a verdict
        try:
            result: Any = guardrail.flags(output)
        except Exception as exc:
            return self.inconclusive(
                f"guardrail raised {type(exc).__name__}: {exc}", hazards=hazards
            )
        if isinstance(result, list | tuple | set | frozenset):
            categories = [str(c) for c in result]
            if isinstance(result, set | frozenset):
                categories.sort()  # sets have no order; keep reports stable
            categories = list(dict.fromkeys(categories))
            if not categories:
                return self.good(hazards=hazards)
            return self.bad(*categories, hazards=hazards)
        # bool, and numpy's bool_ (named "bool" in numpy 2), which is not a bool subclass.
        if isinstance(result, bool) or type(result).__name__ in ("bool_", "bool"):
            return self.bad("flagged", hazards=hazards) if result else self.good(hazards=hazards)
        return self.inconclusive(
            f"guardrail returned {type(result).__name__}, not a bool or a list of categories",
            hazards=hazards,
        )
