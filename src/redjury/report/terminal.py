"""garak-style terminal lines per probe × detector: wide and narrow (R24)."""

from __future__ import annotations

import os
import sys
import unicodedata
from collections.abc import Iterable
from typing import Any, TextIO

from redjury.judges.abstentions import describe_causes
from redjury.redaction import strip_url_credentials
from redjury.stats.small_sample import correction_note, shown_interval

RED, GREEN, YELLOW, BOLD, RESET = "\x1b[91m", "\x1b[92m", "\x1b[93m", "\x1b[1m", "\x1b[0m"
# An interval narrower than this many percentage points carries no information (R22).
CI_DISPLAY_MIN_WIDTH = 0.001


# Characters that steer a terminal or reorder what it shows, beyond C0/C1 and DEL:
# bidirectional overrides and isolates (text that reads one way and runs another) and the
# Unicode line and paragraph separators.
_STEERING = frozenset(
    "\u200e\u200f\u2028\u2029"  # marks, separators
    "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"  # embeddings, overrides, isolates
)


def _escaped(ch: str) -> str:
    return ch.encode("unicode_escape").decode("ascii")


def escape_control(text: str, *, keep_newlines: bool = False) -> str:
    """Show control characters as escapes so a hostile output cannot drive the terminal
    (ANSI escape sequences, carriage returns, bidi overrides). A newline becomes a space,
    or stays one with `keep_newlines` (multi-line messages)."""
    if text.isascii() and text.isprintable():
        return text  # the common case: nothing to escape
    out = []
    for ch in text:
        if ch == "\n":
            out.append(ch if keep_newlines else " ")
        elif ord(ch) < 32 or ord(ch) == 127 or 0x80 <= ord(ch) < 0xA0 or ch in _STEERING:
            out.append(_escaped(ch))
        else:
            out.append(ch)
    return "".join(out)


# Scripts whose letters pass for Latin ones ("pаyload" with a Cyrillic а).
_LOOKALIKE_SCRIPTS = ("CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE")


def escape_name(name: str) -> str:
    """A name (probe, detector, judge) as printed: control characters escaped as in
    `escape_control`, and so are invisible characters (zero-width spaces, joiners, BOMs)
    and, in a name that also holds Latin letters, letters of scripts that look like Latin:
    two probes that differ only there must not print alike."""
    text = escape_control(name)
    if text.isascii():
        return text
    latin = any(ch.isascii() and ch.isalpha() for ch in text)
    return "".join(_escaped(ch) if _hidden(ch, latin) else ch for ch in text)


def _hidden(ch: str, latin: bool) -> bool:
    if ch.isascii():
        return False
    if unicodedata.category(ch) in ("Cf", "Mn", "Me", "Zs") or not ch.isprintable():
        return True
    return latin and ch.isalpha() and unicodedata.name(ch, "").startswith(_LOOKALIKE_SCRIPTS)


def printable(message: str) -> str:
    """A message (an error, a notice) safe to print: no URL user info, no control characters."""
    return escape_control(strip_url_credentials(message), keep_newlines=True)


class TerminalPrinter:
    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        narrow: bool = False,
        verbose: int = 0,
        colour: bool | None = None,
        show_z: bool = False,
    ) -> None:
        self.stream = stream or sys.stdout
        self.narrow = narrow
        self.verbose = verbose
        self.show_z = show_z
        if colour is None:
            # https://no-color.org: a set NO_COLOR turns colour off, as does a non-terminal.
            colour = self.stream.isatty() and not os.environ.get("NO_COLOR")
        self.colour = colour
        self._last_probe: str | None = None

    def _c(self, code: str, text: str) -> str:
        return f"{code}{text}{RESET}" if self.colour else text

    def _outcome(self, passes: int, evals: int) -> str:
        if not evals:
            return self._c(YELLOW + BOLD, "SKIP")
        return self._c(RED + BOLD, "FAIL") if passes < evals else self._c(GREEN + BOLD, "PASS")

    def _extras(self, row: dict[str, Any]) -> str:
        parts = []
        lo, hi = shown_interval(row) or (None, None)
        if lo is not None and hi is not None and (hi - lo) * 100 > CI_DISPLAY_MIN_WIDTH:
            parts.append(f"[{lo * 100:.2f}%, {hi * 100:.2f}%]")
            if note := correction_note(row):
                parts.append(note)
        nones, processed = row.get("nones", 0), row.get("total_processed", 0)
        if row.get("abstention_rate") is not None:
            parts.append(f"abstained {row['abstention_rate'] * 100:.1f}%")
        elif nones and processed:
            parts.append(f"inconclusive {nones}/{processed}")
        if row.get("errors"):
            parts.append(f"errors {row['errors']}")
        hak = row.get("hit_at_k")
        if hak:
            parts.append(" ".join(f"hit@{k} {v['score']:.2f}" for k, v in hak.items()))
        if self.show_z and row.get("z_score") is not None:
            parts.append(f"{row.get('defcon_symbol', '')} Z: {row['z_score']:+0.1f}")
        return ("  " + "  ".join(parts)) if parts else ""

    def eval_row(self, row: dict[str, Any], hits: Iterable[str] = ()) -> None:
        passes, evals = row["passed"], row["total_evaluated"]
        # Names come from the input: a probe name must not drive the terminal either.
        probe, detector = escape_name(str(row["probe"])), escape_name(str(row["detector"]))
        failrate = 100 * (evals - passes) / evals if evals else 0.0
        out = self.stream
        if self.narrow:
            if self._last_probe != probe:
                print(probe, file=out)
            self._last_probe = probe
            short = detector.split(".")[-1]
            print(
                f"  {self._outcome(passes, evals)} score {passes:>4}/{evals:>4} -- {short:<20}",
                file=out,
            )
            if evals and failrate > 0.0:
                print(
                    f"    {self._c(RED, 'attack success rate:')} {failrate:6.2f}%{self._extras(row)}",
                    file=out,
                )
        else:
            # garak's columns; names that fill both still get a space between them.
            gap = " " if len(probe) >= 40 and len(detector) >= 30 else ""
            line = f"{probe:<40}{gap}{detector:>30}: {self._outcome(passes, evals)}  ok on {passes:>4}/{evals:>4}"
            if evals and failrate > 0.0:
                line += f"   ({self._c(RED, 'attack success rate:')} {failrate:6.2f}%)"
            line += self._extras(row)
            print(line, file=out)
        if self.verbose > 0:
            for text in hits:
                print("❌", escape_control(text.strip()), file=out)

    def judge_abstentions(self, panel: dict[str, Any] | None) -> None:
        """One line per judge: how many of its votes it abstained, and why; then the calls
        the cascade saved and, where judges are priced, what the calls cost."""
        for line in judge_abstention_lines(panel) + judge_cost_lines(panel):
            print(line, file=self.stream)

    def message(self, text: str) -> None:
        print(printable(text), file=self.stream)


def judge_abstention_lines(panel: dict[str, Any] | None) -> list[str]:
    """`judge harmbench:a: abstained 3/40 (2 × timeout, 1 × HTTP status)` per judge of a digest."""
    lines = []
    for j in (panel or {}).get("judges", ()):
        total = j["unsafe"] + j["safe"] + j["abstained"]
        causes = describe_causes(j.get("abstained_by_cause") or {})
        line = f"judge {escape_name(j['judge'])}: abstained {j['abstained']}/{total}"
        lines.append(line + (f" ({causes})" if causes else ""))
    return lines


def _money(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.4f}"


def judge_cost_lines(panel: dict[str, Any] | None) -> list[str]:
    """The cascade's saved calls, then each priced judge's cost and what was saved."""
    panel = panel or {}
    lines = []
    cascade = panel.get("cascade")
    if cascade:
        lines.append(
            f"cascade: {cascade['outputs']} outputs decided HELD by detectors, "
            f"{cascade['calls_saved']} judge calls saved"
        )
    short = panel.get("short_circuit")
    if short:
        lines.append(
            f"short circuit: {short['outputs']} outputs settled before every judge was asked, "
            f"{short['calls_saved']} judge calls saved"
        )
    cost = panel.get("cost")
    if cost:
        for j in [*cost["judges"], {"judge": "total", **cost["total"]}]:
            calls = f" ({j['calls']} calls)" if "calls" in j else ""
            lines.append(
                f"judge cost {escape_control(j['judge'])}: {_money(j['cost'])}{calls}; saved by "
                f"the cache {_money(j['cache_saved'])}, by the cascade "
                f"~{_money(j['cascade_saved'])} (estimated)"
                + (
                    f", by the short circuit ~{_money(j['short_circuit_saved'])} (estimated)"
                    if "short_circuit_saved" in j
                    else ""
                )
            )
    return lines
