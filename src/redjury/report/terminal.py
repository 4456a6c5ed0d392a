"""garak-style terminal lines per probe × detector: wide and narrow (R24)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import Any, TextIO

from redjury.stats.small_sample import shown_interval

RED, GREEN, YELLOW, BOLD, RESET = "\x1b[91m", "\x1b[92m", "\x1b[93m", "\x1b[1m", "\x1b[0m"
# An interval narrower than this many percentage points carries no information (R22).
CI_DISPLAY_MIN_WIDTH = 0.001


def escape_control(text: str) -> str:
    """Show control characters as escapes so a hostile output cannot drive the terminal."""
    out = []
    for ch in text:
        if ch == "\n":
            out.append(" ")
        elif ord(ch) < 32 or ord(ch) == 127 or 0x80 <= ord(ch) < 0xA0:
            out.append(ch.encode("unicode_escape").decode("ascii"))
        else:
            out.append(ch)
    return "".join(out)


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
        probe, detector = row["probe"], row["detector"]
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
            line = f"{probe:<40}{detector:>30}: {self._outcome(passes, evals)}  ok on {passes:>4}/{evals:>4}"
            if evals and failrate > 0.0:
                line += f"   ({self._c(RED, 'attack success rate:')} {failrate:6.2f}%)"
            line += self._extras(row)
            print(line, file=out)
        if self.verbose > 0:
            for text in hits:
                print("❌", escape_control(text.strip()), file=out)

    def message(self, text: str) -> None:
        print(text, file=self.stream)
