"""What the agentic quality detectors share: a `judge:` model config (a JudgeSpec without
`scoring`) and async judging of every output through a QualityJudge."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from redjury.attempts import Attempt
from redjury.detectors.base import Detector, DetectorParams, Family, Finding
from redjury.judges.agentic.judge import JudgeResult, QualityJudge
from redjury.judges.config import ConnectionSpec, GenerationSpec, JudgeSpec
from redjury.judges.scoring import ScoringType
from redjury.redaction import Redactor

T = TypeVar("T")


def _about(field: str) -> str | None:
    return JudgeSpec.model_fields[field].description


class QualityJudgeSpec(BaseModel):
    """A judge model for a quality detector: JudgeSpec's fields except `scoring`, which the
    detector fixes (its prompt and parser)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)

    name: str = Field(description=_about("name"))
    id: str | None = Field(None, description=_about("id"))
    connection: ConnectionSpec = Field(
        default_factory=lambda: ConnectionSpec.model_validate({}), description=_about("connection")
    )
    generation: GenerationSpec = Field(
        default_factory=lambda: GenerationSpec.model_validate({}), description=_about("generation")
    )
    options: dict[str, Any] = Field(default_factory=dict, description=_about("options"))

    def judge_spec(self) -> JudgeSpec:
        return JudgeSpec.model_validate(self.model_dump(by_alias=False))


class QualityJudgeParams(DetectorParams):
    judge: QualityJudgeSpec = Field(
        description="The judge model: a judge as in `evaluation.judges`, without `scoring`."
    )
    cache: bool = Field(True, description="Use the persistent judge cache.")
    cache_path: str | None = Field(
        None, description="Judge cache file; default the user cache dir's judges.sqlite."
    )


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from sync code, even inside a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    # A running loop in this thread cannot be re-entered: run the coroutine on a worker.
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:
            box["error"] = exc

    worker = threading.Thread(target=work, name="redjury-judge")
    worker.start()
    worker.join()
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value


class QualityJudgeDetector(Detector):
    """Base of the agentic quality detectors: one judge call per output, never a raw request."""

    family: ClassVar[Family] = Family.AGENTIC
    quality: ClassVar[bool] = True
    default_enabled: ClassVar[bool] = False
    Params: ClassVar[type[DetectorParams]] = QualityJudgeParams
    params: QualityJudgeParams
    # True for detectors that read the same judgement as a companion (faithfulness/hallucination).
    shares_judgement: ClassVar[bool] = False

    def __init__(self, params: DetectorParams | None = None) -> None:
        super().__init__(params)
        p = self.params
        self.judge = QualityJudge(
            p.judge.judge_spec(),
            self.scoring_type(),
            cache_path=Path(p.cache_path) if p.cache_path else None,
            use_cache=p.cache,
            share=self.shares_judgement,
        )

    def scoring_type(self) -> ScoringType:
        raise NotImplementedError

    def finding(self, attempt: Attempt, result: JudgeResult) -> Finding:
        """The verdict for one judged output; the judge's result is already not None."""
        raise NotImplementedError

    def missing(self, attempt: Attempt) -> str | None:
        """Why the attempt cannot be judged at all (INCONCLUSIVE, no request), or None."""
        return None

    def details(self, result: JudgeResult, **more: Any) -> dict[str, Any]:
        return {"judge": self.judge.id, **result.to_json(), **more}

    async def adetect(self, attempt: Attempt) -> list[Finding]:
        missing = self.missing(attempt)
        if missing is not None:
            return [self.inconclusive(missing) for _ in attempt.outputs]
        pending = [self.judge.judge(attempt, out) for out in attempt.outputs if out is not None]
        results = iter(await asyncio.gather(*pending))
        findings = []
        for out in attempt.outputs:
            if out is None:
                findings.append(self.inconclusive("no output"))
                continue
            result = next(results)
            if result.score is None:
                reason = result.reason or "judge abstained"
                findings.append(self.inconclusive(reason, **self.details(result)))
            else:
                findings.append(self.finding(attempt, result))
        return findings

    def detect(self, attempt: Attempt) -> list[Finding]:
        return run_sync(self._detect_and_close(attempt))

    async def _detect_and_close(self, attempt: Attempt) -> list[Finding]:
        # A sync call owns its event loop: connections must not outlive it.
        try:
            return await self.adetect(attempt)
        finally:
            await self.judge.engine.aclose()

    def secrets(self) -> list[str]:
        return self.judge.secrets()

    def credentials(self) -> list[str]:
        """The judge's API key, header values and URL user info: masked everywhere, always."""
        return list(self.judge.credentials)

    def mask_answers_with(self, redactor: Redactor) -> None:
        """Mask these values too (the run's markers) in the judge's answers."""
        self.judge.mask_answers_with(redactor)

    def flush_cache(self) -> None:
        if self.judge.cache is not None:
            self.judge.cache.flush()

    async def aclose(self) -> None:
        self.judge.release()
        await self.judge.aclose()
