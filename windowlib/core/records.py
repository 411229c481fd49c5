"""What one key's window operator keeps and where its outputs go: the run's ``Clock``, the
``Sink`` of outputs, and the ``WindowRecord`` of one window (everything but its contents).

``WindowRecord.to_data``/``from_data`` are part of the checkpoint format (plain data, never
pickles); changing them needs a new snapshot format version.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from windowlib.core.codec import decode, encode
from windowlib.core.time import MIN_TS

EVENT, PROCESSING = "event", "processing"


@dataclass
class Clock:
    """Global time of a run: the watermark and processing time (ms; ``MIN_TS`` = unknown)."""

    watermark: int = MIN_TS
    processing_time: int = MIN_TS


class Sink:
    """Collects a run's outputs: firing rows, late elements and side outputs."""

    def __init__(self) -> None:
        self.firings: list[dict] = []
        self.late: list[tuple[dict, int]] = []
        self.side_outputs: dict[str, list[Any]] = {}

    def firing(self, row: dict) -> None:
        self.firings.append(row)

    def late_element(self, row: dict, watermark: int) -> None:
        self.late.append((row, watermark))

    def side_output(self, tag: str, value: Any) -> None:
        self.side_outputs.setdefault(tag, []).append(value)


@dataclass(slots=True)
class WindowRecord:
    """Everything kept for one (actual) window of a key, besides its pane contents."""

    trigger_state: dict = field(default_factory=dict)
    fn_state: dict = field(default_factory=dict)
    pane_index: int = 0
    on_time_emitted: bool = False
    last_rows: list | None = None
    timers: set = field(default_factory=set)
    pending: bool = False  # elements arrived since the last firing

    def to_data(self) -> dict:
        return {"trigger": encode(self.trigger_state), "fn": encode(self.fn_state),
                "pane": self.pane_index, "on_time": self.on_time_emitted,
                "last": encode(self.last_rows), "pending": self.pending}

    @classmethod
    def from_data(cls, d: dict) -> WindowRecord:
        return cls(decode(d["trigger"]), decode(d["fn"]), int(d["pane"]), bool(d["on_time"]),
                   decode(d["last"]), pending=bool(d.get("pending", False)))
