"""The windows of the native and pane paths' rows in Spark SQL (SPEC §2's alignment and
lateness per window): ``assign_windows`` for the native firings, ``kept_and_passed`` for the
pane path's single pass, where the rejected and late rows travel with the kept ones to the
walker (``pane_records.PaneWalkBase.pass_through``)."""

from __future__ import annotations

from typing import Any

from windowlib.core.assigners import GlobalWindows
from windowlib.core.outputs import TOO_LATE
from windowlib.engines.spark.bundles import TS
from windowlib.engines.spark.native_parts import (
    MX,
    PB,
    REASON,
    WP,
    WS,
    plus_saturating,
    saturating_sql,
)

__all__ = ["assign_windows", "kept_and_passed"]


def assign_windows(assigner: Any, accepted: Any, lateness: int) -> tuple[Any, Any, Any, int]:
    """The windows of the accepted rows, one branch per assigner family; returns ``(dropped,
    processed, kept, size)``: ``dropped`` the condition of a row too late for every window
    it belongs to (the late output), ``processed`` the other rows, ``kept`` one row per
    (element, window) the watermark has not cleaned up, with its start ``WS`` and max
    timestamp ``MX``, and ``size`` the window size in ms.

    - Aligned windows (tumbling, sliding): an element belongs to ``ceil(size / slide)``
      windows ending after it (SPEC §2's alignment); lateness per window (``cleanup``).
    - ``GlobalWindows`` (the pane path's count windows): one window, never late; ``WS`` 0,
      ``MX`` -1, size 0.
    - Sessions (the pane path's session walker and ``session_sql.py``): the windows merge,
      so they are assigned and judged late on the merged window later; here nothing is
      dropped and ``kept`` is one row per element, without window columns; size 0.
    - Processing-time tumbling and sliding windows (the pane path): aligned as above on the
      bundle's processing time ``P_b`` (``__wl_pb``), never late (Flink judges lateness in
      event time only), so nothing is dropped."""
    from pyspark.sql import functions as F

    dropped = _dropped(assigner, lateness)
    processed = accepted if dropped is None else accepted.filter(~dropped)
    kept, size = _windows(assigner, processed, lateness, None)
    return F.lit(False) if dropped is None else dropped, processed, kept, size


def kept_and_passed(assigner: Any, screened: Any, lateness: int) -> Any:
    """``assign_windows``'s kept rows and, in the same frame (one scan of
    the input for all three outputs), every rejected or late input row once, with its
    reason in ``REASON`` (``too_late`` for a row dropped for every window; null on kept
    rows) and the window columns of its latest window (null without an event time).
    ``screened`` is ``NativeInputs.screened``; not for merging assigners."""
    from pyspark.sql import functions as F

    dropped = _dropped(assigner, lateness)
    rows = screened if dropped is None else screened.withColumn(
        REASON, F.coalesce(F.col(REASON), F.when(dropped, F.lit(TOO_LATE))))
    return _windows(assigner, rows, lateness, F.col(REASON).isNotNull())[0]


def _dropped(assigner: Any, lateness: int) -> Any:
    """The condition of a row too late for every window it belongs to (aligned event-time
    windows only; ``None``: no row ever is)."""
    from pyspark.sql import functions as F

    if assigner.is_merging or isinstance(assigner, GlobalWindows) \
            or not assigner.is_event_time:
        return None
    size, slide = assigner.size_ms, getattr(assigner, "slide_ms", assigner.size_ms)
    start_sql = f"({TS} - pmod(({TS} - {assigner.offset_ms}), {slide}))"
    return F.expr(f"{saturating_sql(f'({start_sql} + {size - 1})', lateness)} <= {WP}")


def _windows(assigner: Any, rows: Any, lateness: int, through: Any) -> tuple[Any, int]:
    """``(kept, size)`` of ``assign_windows`` over ``rows``; the rows where ``through``
    holds (a Column, or ``None``: none) stay one row each, windows or not."""
    from pyspark.sql import functions as F

    if assigner.is_merging:
        return rows, 0
    if isinstance(assigner, GlobalWindows):
        kept = rows.withColumn(WS, F.lit(0).cast("long")).withColumn(
            MX, F.lit(-1).cast("long"))
        return kept, 0
    size, slide, offset = assigner.size_ms, getattr(assigner, "slide_ms", assigner.size_ms), \
        assigner.offset_ms
    if not assigner.is_event_time:
        kept = _aligned(rows, PB, size, slide, offset, through)
        return kept.withColumn(MX, F.col(WS) + F.lit(size - 1)), size
    kept = _aligned(rows, TS, size, slide, offset, through)
    if slide != size:
        live = plus_saturating(F.col(WS) + F.lit(size - 1), lateness) > F.col(WP)
        kept = kept.filter(live if through is None else through | live)
    return kept.withColumn(MX, F.col(WS) + F.lit(size - 1)), size


def _aligned(frame: Any, time: str, size: int, slide: int, offset: int,
             through: Any = None) -> Any:
    """``frame`` with one row per aligned window (SPEC §2) containing the column ``time``
    (ms), its start in ``WS``: the latest start first, as the assigners list them (rows
    where ``through`` holds: their latest window only)."""
    from pyspark.sql import functions as F

    last_start = F.expr(f"({time} - pmod(({time} - {offset}), {slide}))")
    if slide == size:
        return frame.withColumn(WS, last_start)
    starts = F.array(*[last_start - F.lit(i * slide) for i in range(-(-size // slide))])
    if through is not None:
        starts = F.when(through, F.array(last_start)).otherwise(starts)
    kept = frame.withColumn(WS, F.explode(starts))
    if size % slide:
        inside = F.col(WS) > F.col(time) - F.lit(size)
        kept = kept.filter(inside if through is None else through | inside)
    return kept
