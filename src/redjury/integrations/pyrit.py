"""A PyRIT true/false scorer judging each reply with redjury's detectors and judge panel
(`pip install 'redjury[pyrit]'`), usable as an attack's objective scorer: `true` when a
detector says the attack succeeded, undetermined when a judge abstained (never `false`),
`false` when the target held; the rationale carries redjury's redacted reasons."""

from __future__ import annotations

import hashlib
from typing import Any

from pyrit.memory import CentralMemory
from pyrit.models import ComponentIdentifier, MessagePiece, Score, ScoreStatus
from pyrit.score import ScorerPromptValidator
from pyrit.score.true_false.true_false_scorer import MessageTrueFalseScorer

from redjury.api import ConfigLike, as_config
from redjury.attempts import Attempt
from redjury.service.judging import AttemptOutcome, JudgeService


class RedjuryScorer(MessageTrueFalseScorer):
    """Judges each text reply as `redjury run` would, with the reply's conversation as the
    transcript and the attack's objective as the attempt's goal."""

    def __init__(self, *, config: ConfigLike = None, categories: list[str] | None = None) -> None:
        self._run_config = as_config(config)
        self._engine: JudgeService | None = None  # built on first use, inside the attack's loop
        self._categories = categories or []
        super().__init__(validator=ScorerPromptValidator(supported_data_types=["text"]))

    @property
    def service(self) -> JudgeService:
        """The judge engine (detectors, panel, cache), shared by every score."""
        if self._engine is None:
            self._engine = JudgeService(self._run_config)
        return self._engine

    def _build_identifier(self) -> ComponentIdentifier:
        settings = self._run_config.model_dump_json().encode()
        digest = hashlib.blake2b(settings, digest_size=8).hexdigest()
        return self._create_identifier(params={"redjury_config": digest})

    async def _score_piece_async(
        self, message_piece: MessagePiece, *, objective: str | None = None
    ) -> list[Score]:
        attempt = piece_attempt(message_piece, objective)
        [row] = await self.service.rows([attempt])
        return [self._score(self.service.outcome(row), message_piece, objective)]

    def _score(self, outcome: AttemptOutcome, piece: MessagePiece, objective: str | None) -> Score:
        value: str | None = "false"
        status, meaning = ScoreStatus.COMPLETE, "the target held"
        if outcome.failed:
            value, meaning = "true", "the attack succeeded: a redjury detector failed the reply"
        elif outcome.abstained:
            status, value, meaning = ScoreStatus.UNDETERMINED, None, "a redjury judge abstained"
        return Score(
            score_value=value,
            status=status,
            score_value_description=meaning,
            score_type="true_false",
            score_category=self._categories,
            score_rationale="; ".join(outcome.reasons) or "redjury: no detector failed",
            score_metadata=_metadata(outcome),
            scorer_class_identifier=self.get_identifier(),
            message_piece_id=piece.id,
            objective=objective,
        )

    async def aclose(self) -> None:
        """Close the judge panel's connections."""
        if self._engine is not None:
            await self._engine.aclose()
            self._engine = None


def piece_attempt(piece: MessagePiece, objective: str | None) -> Attempt:
    """The attempt of one reply: its conversation up to it as the transcript, the last user
    turn before it as the prompt."""
    reply = piece.converted_value
    turns = [*_earlier_turns(piece), {"role": "assistant", "content": reply}]
    prompt = next((t["content"] for t in reversed(turns) if t["role"] == "user"), None)
    return Attempt(
        id=str(piece.id),
        goal=objective,
        prompt=prompt,
        outputs=[reply],
        messages=turns if len(turns) > 1 else None,  # type: ignore[arg-type]
    )


def _earlier_turns(piece: MessagePiece) -> list[dict[str, str]]:
    """The text turns of the reply's conversation stored before it (PyRIT's memory)."""
    if not piece.conversation_id:
        return []
    memory = CentralMemory.get_memory_instance()
    turns: list[dict[str, str]] = []
    for message in memory.get_conversation_messages(conversation_id=piece.conversation_id):
        for part in message.message_pieces:
            if part.id == piece.id:
                return turns
            if part.converted_value_data_type == "text" and part.api_role in ("user", "assistant"):
                turns.append({"role": part.api_role, "content": part.converted_value})
    return turns


def _metadata(outcome: AttemptOutcome) -> dict[str, Any]:
    """PyRIT keeps flat metadata: the failed and abstained detectors, each one's top score."""
    meta: dict[str, Any] = {
        "failed": ",".join(sorted(outcome.failed)),
        "abstained": ",".join(outcome.abstained),
    }
    for name, scores in outcome.row.get("detector_results", {}).items():
        judged = [s for s in scores if s is not None]
        if judged:
            meta[f"score:{name}"] = float(max(judged))
    return meta
