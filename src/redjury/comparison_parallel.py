"""Both runs of a comparison read at once: NEW in a forked child while this process reads BASE.

The child inherits this process's string-hash seed (a fork, never a spawn), so its pairing keys
hash ids, prompts and goals as this process does; its probe and intent codes, numbered in its
own vocabulary, are renumbered into the shared one as if NEW had been read after BASE here. Small
reports, sources that are not files, and systems without `fork` are read here, one after the
other. The rows are the same either way."""

from __future__ import annotations

import multiprocessing
import threading
import traceback
from pathlib import Path
from typing import Any

import numpy as np

from redjury.comparison import (
    _MIX,
    CompareError,
    RunCounts,
    RunLike,
    Vocabulary,
    read_run,
)
from redjury.report.digest import report_path_of

# Reports smaller than this (the smaller of the two, in bytes) are read in this process: a
# fork and the transfer cost more than they save.
PARALLEL_BYTES = 20 << 20


def read_runs(
    base: RunLike, new: RunLike, vocabulary: Vocabulary, labels: tuple[str, str]
) -> tuple[RunCounts, RunCounts]:
    """BASE's and NEW's counts, sharing `vocabulary` (BASE's names first)."""
    if not _worth_a_child(base, new):
        return read_run(base, vocabulary, labels[0]), read_run(new, vocabulary, labels[1])
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(sender, new, labels[1]), daemon=True)
    child.start()
    sender.close()
    try:
        base_run = read_run(base, vocabulary, labels[0])
        found = _received(receiver)
    except BaseException:
        child.kill()
        raise
    finally:
        child.join()
        receiver.close()
    if found is None:  # the child died or failed unexpectedly: read NEW here for its error
        return base_run, read_run(new, vocabulary, labels[1])
    return base_run, renumbered(found, vocabulary)


def _worth_a_child(base: RunLike, new: RunLike) -> bool:
    if "fork" not in multiprocessing.get_all_start_methods() or threading.active_count() > 1:
        return False  # forking a process with threads can deadlock the child
    try:
        sizes = [report_path_of(Path(s)).stat().st_size for s in (base, new)]
    except (TypeError, ValueError, OSError):
        return False  # not a file (a Results, rows) or unreadable: read_run names the problem
    return min(sizes) >= PARALLEL_BYTES


def _child(sender: Any, source: RunLike, label: str) -> None:
    try:
        run = read_run(source, Vocabulary(), label)
    except CompareError as exc:
        sender.send(("compare_error", str(exc)))
    except BaseException:
        sender.send(("failed", traceback.format_exc()))
    else:
        _send(sender, run)
    sender.close()


_COLUMNS = ("probe_of", "intent_of", "id_keys", "text_keys")


def _send(sender: Any, run: RunCounts) -> None:
    """The run's small parts pickled, then each array's bytes as they lie (no pickled copy)."""
    arrays = [getattr(run, name) for name in _COLUMNS]
    for name, (fails, scored) in run.detectors.items():
        arrays += [fails, scored, run.present[name]]
    arrays = [np.ascontiguousarray(a) for a in arrays]
    small = {
        "label": run.label,
        "header": run.header,
        "corrections": run.corrections,
        "vocabulary": run.vocabulary,
        "detectors": list(run.detectors),
        "arrays": [(a.dtype.str, a.shape) for a in arrays],
    }
    sender.send(("ok", small))
    for array in arrays:
        sender.send_bytes(array.data.cast("B"))


def _received(receiver: Any) -> RunCounts | None:
    try:
        kind, value = receiver.recv()
        if kind == "ok":
            return _rebuilt(value, receiver)
    except (EOFError, OSError):
        return None
    if kind == "compare_error":
        raise CompareError(value)
    return None


def _rebuilt(small: dict[str, Any], receiver: Any) -> RunCounts:
    arrays = []
    for dtype, shape in small["arrays"]:
        array = np.empty(shape, dtype=np.dtype(dtype))
        receiver.recv_bytes_into(array.data.cast("B"))
        arrays.append(array)
    columns, rest = arrays[: len(_COLUMNS)], iter(arrays[len(_COLUMNS) :])
    detectors, present = {}, {}
    for name in small["detectors"]:
        detectors[name] = (next(rest), next(rest))
        present[name] = next(rest)
    return RunCounts(
        label=small["label"],
        header=small["header"],
        probe_of=columns[0],
        intent_of=columns[1],
        id_keys=columns[2],
        text_keys=columns[3],
        detectors=detectors,
        present=present,
        corrections=small["corrections"],
        vocabulary=small["vocabulary"],
    )


def renumbered(run: RunCounts, vocabulary: Vocabulary) -> RunCounts:
    """A run read with its own vocabulary, its probe and intent codes and its pairing keys
    (which mix in the probe's code) moved into `vocabulary`, names new to it added in the
    run's order, as reading it with `vocabulary` would have numbered them."""
    probes = _code_map(run.vocabulary.probes, vocabulary.probes)
    intents = _code_map(run.vocabulary.intents, vocabulary.intents)
    run.probe_of, old_probes = probes[run.probe_of], run.probe_of
    if intents.size:
        # -1 (no intent, or "") stays -1
        run.intent_of = np.where(run.intent_of < 0, -1, intents[np.maximum(run.intent_of, 0)])
    run.text_keys = _rekeyed(run.text_keys, old_probes, run.probe_of)
    has_id = run.id_keys != 0
    run.id_keys = np.where(has_id, _rekeyed(run.id_keys, old_probes, run.probe_of), 0)
    run.vocabulary = vocabulary
    return run


def _code_map(own: dict[str, int], shared: dict[str, int]) -> np.ndarray:
    """Own code -> shared code (a name the shared table lacks gets its next code)."""
    codes = np.zeros(len(own), dtype=np.int64)
    for name, code in own.items():
        codes[code] = shared.setdefault(name, len(shared))
    return codes


def _rekeyed(keys: np.ndarray, old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """Keys mixed with the old probe codes, mixed with the new ones instead (XOR undoes XOR)."""
    one = np.uint64(1)
    mix = ((old.astype(np.uint64) + one) * _MIX) ^ ((new.astype(np.uint64) + one) * _MIX)
    return (keys.view(np.uint64) ^ mix).view(np.int64)
