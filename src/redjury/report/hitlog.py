"""The hitlog as JSONL lines: garak's hitlog entries (`evaluators.HitlogBuilder`)
serialised fast, byte for byte what `JsonlWriter` writes for the dicts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from redjury.evaluators import HitlogBuilder, hit_output
from redjury.report.jsonl import dumps_line

# Hitlog line endings (generator, probe, detector, generations) a builder keeps.
_TAILS_KEPT = 256
# garak's Conversation of one user turn, around the serialised prompt text.
_ONE_TURN = b'{"turns":[{"role":"user","content":{"text":%b}}]}'
# Output indices as the hitlog writes them, made once (formatting one costs more per hit).
_INDEXED = 64
_INDEX = tuple(b"%d" % i for i in range(_INDEXED))


class HitlogLines(HitlogBuilder):
    """`HitlogBuilder` whose `line` gives an entry as a JSONL line directly: the attempt's
    shared fields are serialised once and each hit splices in its output, score, index and
    detector, byte for byte what `JsonlWriter` writes for the dict `__call__` returns."""

    __slots__ = ("_line_row", "_parts", "_tails", "_outputs")

    def __init__(
        self, generator: str | None = None, generations_per_prompt: int | None = None
    ) -> None:
        super().__init__(generator, generations_per_prompt)
        self._line_row: dict[str, Any] | None = None
        self._parts: tuple[bytes, bytes, bytes, tuple[Any, Any, Any], list[Any], Any] = (
            b"",
            b"",
            b"",
            (None, None, None),
            [],
            False,
        )
        self._tails: dict[tuple[tuple[Any, Any, Any], str], bytes] = {}
        # The row's outputs as serialised so far, by index: every detector that failed an
        # output splices in the same bytes.
        self._outputs: dict[int, bytes] = {}

    def line(self, row: dict[str, Any], detector: str, idx: int, score: float) -> bytes:
        """The hitlog entry of `__call__` as one JSONL line (bytes, newline included)."""
        return self.lines(row, detector, ((idx, score),))

    def lines(
        self, row: dict[str, Any], detector: str, failed: Sequence[tuple[int, float]]
    ) -> bytes:
        """The JSONL lines of one detector's failing outputs of `row`, as (output index,
        score) pairs, joined: one call for them all (a call per hit was a fifth of its cost)."""
        try:
            return self._splice(row, detector, failed)
        except TypeError:  # a value orjson does not know: the dicts, serialised as written
            return b"".join(dumps_line(self(row, detector, i, score)) for i, score in failed)

    def _splice(
        self, row: dict[str, Any], detector: str, failed: Sequence[tuple[int, float]]
    ) -> bytes:
        if row is not self._line_row:
            self._start_line(row)
        head, mid, ids, names, outputs, fields = self._parts
        tail = self._tails.get((names, detector))
        if tail is None:
            tail = self._tail(names, detector)
        dumps = orjson.dumps
        n = len(outputs)
        done = self._outputs
        parts: list[bytes] = []
        for idx, score in failed:
            output = done.get(idx)
            if output is None:
                text = outputs[idx] if idx < n else None
                # Redjury's own rows: the head ends inside `{"text":`, so only the text is
                # dumped.
                output = dumps(text) if fields is False else dumps(hit_output(text, idx, fields))
                done[idx] = output
            index = _INDEX[idx] if idx < _INDEXED else b"%d" % idx
            parts += (head, output, mid, dumps(score), ids, index, tail)
        return b"".join(parts)

    def _start_line(self, row: dict[str, Any]) -> None:
        """Serialise the fields every hit of this row shares, cut where a hit's output,
        score and index go in (garak's key order: goal, prompt, output, triggers, score,
        run_id, attempt_id, attempt_seq, attempt_idx, then the tail)."""
        dumps = orjson.dumps
        outputs = row.get("outputs") or []
        # Read as `_fields` reads them (one call fewer per row; the property test holds
        # the two to the same entry). A garak report's prompt, Message fields and uuid as
        # garak wrote them.
        source = row.get("source_record") or {}
        if "prompt" in source:
            prompt = dumps(source["prompt"])
        else:
            text = row.get("prompt")
            prompt = b"null" if text is None else _ONE_TURN % dumps(text)
        fields = source.get("outputs") if "outputs" in source else False
        opened = b'{"text":' if fields is False else b""
        notes = row.get("notes") or {}
        triggers = notes.get("triggers") if isinstance(notes, dict) else None
        attempt_id = source.get("uuid", row.get("id"))
        self._parts = (
            b'{"goal":%b,"prompt":%b,"output":%b' % (dumps(row.get("goal")), prompt, opened),
            b'%b,"triggers":%b,"score":' % (b"}" if opened else b"", dumps(triggers)),
            b',"run_id":%b,"attempt_id":%b,"attempt_seq":%b,"attempt_idx":'
            % (dumps(row.get("run_id")), dumps(attempt_id), dumps(row.get("seq"))),
            # The last group rarely changes from row to row: its lines are kept in `_tails`.
            (
                row.get("generator") or self.generator,
                row.get("probe"),
                self.generations_per_prompt or len(outputs),
            ),
            outputs,
            fields,
        )
        self._outputs = {}
        self._line_row = row

    def _tail(self, names: tuple[Any, Any, Any], detector: str) -> bytes:
        generator, probe, gpp = names
        tail = (
            b","
            + orjson.dumps({"generator": generator, "probe": probe, "detector": detector})[1:-1]
            + b',"generations_per_prompt":'
            + orjson.dumps(gpp)
            + b"}\n"
        )
        if len(self._tails) >= _TAILS_KEPT:
            self._tails.clear()
        self._tails[(names, detector)] = tail
        return tail
