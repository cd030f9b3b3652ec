"""A small progress bar for the ahead-of-time build (no dependencies).

    with Progress(total=len(specs), label="compiling") as bar:
        for spec in specs:
            bar.step(f"fused_fwd {spec.dtype} hv/h={spec.ratio}")
            compile(spec)

On a terminal the bar redraws one line in place:

    compiling [#######.............]  3/12  25%  0:07 < 0:21  fused_fwd bf16 hv/h=2 ...

When stderr is not a terminal (CI logs, `| tee`), each step is one plain line, so logs stay readable:

    [3/12] compiling fused_fwd bf16 hv/h=2 ... (7.4 s elapsed)

`step(name)` announces the item that is about to run; the previous one counts as done. `done()` (or
leaving the `with` block) prints the total time. Set FLASHQLA_PROGRESS=plain to force plain lines,
FLASHQLA_PROGRESS=0 to silence the bar (errors still reach stderr through the build driver).
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from typing import TextIO

__all__ = ["Progress", "format_seconds"]


def format_seconds(seconds: float) -> str:
    """0:07, 1:02:03: short wall-clock durations for the bar."""
    seconds = max(0, int(round(seconds)))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    """Counts `total` named steps and reports them on `stream` (stderr by default)."""

    BAR_WIDTH = 20

    def __init__(
        self,
        total: int,
        label: str = "",
        *,
        stream: TextIO | None = None,
        mode: str | None = None,
    ) -> None:
        if total < 0:
            raise ValueError(f"Progress: total must be >= 0, got {total}")
        self.total = int(total)
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.count = 0  # steps announced so far
        self.current: str | None = None
        self.failed = False
        self._start = time.monotonic()
        self._closed = False
        self._line_len = 0
        self.mode = mode or self._pick_mode()

    # ------------------------------------------------------------------ mode
    def _pick_mode(self) -> str:
        env = os.environ.get("FLASHQLA_PROGRESS", "").strip().lower()
        if env in ("0", "off", "none", "quiet"):
            return "quiet"
        if env in ("plain", "lines", "log"):
            return "plain"
        if env in ("tty", "bar"):
            return "tty"
        isatty = getattr(self.stream, "isatty", None)
        try:
            tty = bool(isatty()) if isatty else False
        except (ValueError, OSError):  # closed stream
            tty = False
        if tty and os.environ.get("TERM", "") != "dumb" and not os.environ.get("CI"):
            return "tty"
        return "plain"

    # ------------------------------------------------------------- reporting
    @property
    def elapsed(self) -> float:
        return time.monotonic() - self._start

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (ValueError, OSError):
            pass

    def _prefix(self) -> str:
        return f"[{self.count}/{self.total}]" + (f" {self.label}" if self.label else "")

    def _bar_line(self) -> str:
        done = max(0, self.count - 1)  # the announced step is still running
        frac = done / self.total if self.total else 1.0
        fill = int(round(frac * self.BAR_WIDTH))
        bar = "#" * fill + "." * (self.BAR_WIDTH - fill)
        width = len(str(self.total))
        line = f"{self.label + ' ' if self.label else ''}[{bar}] {self.count:>{width}}/{self.total} {frac:4.0%}"
        line += f"  {format_seconds(self.elapsed)}"
        if done:
            eta = self.elapsed / done * (self.total - done)
            line += f" < {format_seconds(eta)}"
        if self.current:
            line += f"  {self.current} ..."
        cols = shutil.get_terminal_size((100, 20)).columns
        return line[: max(20, cols - 1)]

    def _redraw(self) -> None:
        line = self._bar_line()
        pad = " " * max(0, self._line_len - len(line))
        self._line_len = len(line)
        self._write("\r" + line + pad)

    def step(self, name: str = "") -> None:
        """Announce the next step (the previous one is done)."""
        if self._closed:
            raise RuntimeError("Progress.step() after done()")
        self.count += 1
        self.current = name
        if self.mode == "quiet":
            return
        if self.mode == "plain":
            over = "" if self.count <= self.total else " (over total)"
            self._write(f"{self._prefix()} {name} ...{over} ({self.elapsed:.1f} s elapsed)\n")
        else:
            self._redraw()

    def log(self, message: str) -> None:
        """Print a message without breaking the bar (e.g. a warning from one step)."""
        if self.mode == "tty" and self._line_len:
            self._write("\r" + " " * self._line_len + "\r")
            self._line_len = 0
            self._write(message.rstrip("\n") + "\n")
            if self.current is not None:
                self._redraw()
        else:
            self._write(message.rstrip("\n") + "\n")

    def done(self, failed: bool = False) -> None:
        """Finish: print the total (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self.failed = self.failed or failed
        if self.mode == "quiet":
            return
        status = "failed" if self.failed else "done"
        summary = (
            f"{self.label + ': ' if self.label else ''}{status}, {self.count}/{self.total} steps "
            f"in {format_seconds(self.elapsed)} ({self.elapsed:.1f} s)"
        )
        if self.mode == "tty":
            self._write("\r" + " " * self._line_len + "\r" + summary + "\n")
        else:
            self._write(summary + "\n")

    # ------------------------------------------------------- context manager
    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.done(failed=exc_type is not None)
