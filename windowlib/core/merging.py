"""Session merging for ``KeyDriver`` (SPEC §5): Flink's ``MergingWindowSet``.

Each actual window maps to a *state window* whose pane contents it uses, so a merge moves no
contents, only the mapping; records, trigger state (``on_merge``) and per-window function state
merge into the covering window, and the merged windows' timers are dropped.
"""

from __future__ import annotations

from typing import Any

from windowlib.core.errors import ExecutionError, WindowlibError
from windowlib.core.functions import PENDING_MERGE
from windowlib.core.lateness import cleanup_time, is_late
from windowlib.core.records import WindowRecord
from windowlib.core.runner import function_failed, trigger_failed
from windowlib.core.time import MAX_TS


class SessionMerging:
    """The merging half of ``KeyDriver`` (a mixin: it works on the driver's state)."""

    merging: dict[Any, Any] | None
    records: dict[Any, WindowRecord]
    contents: dict[Any, Any]
    logic: Any
    key_arg: Any

    def _clear_trigger(self, window: Any, ctx: Any) -> None:
        """``trigger.clear`` for ``window``; a failure is ``FUNCTION_FAILED`` naming it."""
        try:
            self.logic.trigger.clear(window, ctx)
        except WindowlibError:
            raise
        except Exception as exc:
            raise trigger_failed(self.logic.trigger, self.key_arg, window, exc) from exc

    def _add_merging_window(self, new_window: Any) -> Any:
        """Flink's ``MergingWindowSet.addWindow``: returns the window the element goes to."""
        mapping = self.merging
        assert mapping is not None
        merges = self.logic.assigner.merge_windows([*mapping.keys(), new_window])
        result, merged_new = new_window, False
        for cover, members in merges:
            members = sorted(members, key=lambda w: w.sort_key())
            if new_window in members:
                members.remove(new_window)
                merged_new, result = True, cover
            if not members:
                continue
            state_window = mapping[members[0]]
            merged_state = [mapping.pop(m) for m in members if m in mapping]
            mapping[cover] = state_window
            merged_state.remove(state_window)
            if not (cover in members and len(members) == 1):
                self._merge(cover, members, state_window, merged_state)
        if not merges or (result == new_window and not merged_new):
            mapping[result] = result
        return result

    def _merge(self, cover: Any, members: list, state_window: Any, merged_state: list) -> None:
        logic = self.logic
        cleanup_at = cleanup_time(cover.max_timestamp, logic.allowed_lateness_ms,
                                  logic.event_time)
        if is_late(cleanup_at, self.clock.watermark, logic.event_time):
            # cannot happen for live windows; Flink guards it too
            raise ExecutionError(f"merging produced a window {cover} that is already past the "
                                 "watermark", code="MERGE_INVALID")
        old = [(m, self.records[m]) for m in members if m in self.records and m != cover]
        record = self.records.get(cover)
        if record is None:
            record = self.records[cover] = WindowRecord()
        record.pending = record.pending or any(rec.pending for _, rec in old)
        if logic.retracting:
            for _, rec in old:
                self._retract(rec)
        ctx = self._ctx
        ctx.window, ctx.record = cover, record
        ctx.merge_sources = [rec.trigger_state for _, rec in old]
        try:
            logic.trigger.on_merge(cover, ctx)
        except WindowlibError:
            raise
        except Exception as exc:
            raise trigger_failed(logic.trigger, self.key_arg, cover, exc) from exc
        ctx.merge_sources = []
        self._merge_fn_state(record, [rec for _, rec in old])
        for window, rec in old:
            del self.records[window]
            ctx.window, ctx.record = window, rec
            self._clear_trigger(window, ctx)
            self._drop_timers(window, rec)
        target = self.contents.get(state_window)
        try:
            for sw in merged_state:
                target = logic.runner.merge(target, self.contents.pop(sw, None))
        except WindowlibError:
            raise
        except Exception as exc:            # the aggregate function's merge()
            raise function_failed(logic.runner.spec.producer, self.key_arg, cover, exc) from exc
        if target is not None:
            self.contents[state_window] = target
        if cleanup_at != MAX_TS:
            self.timer_op(logic.window_domain, cleanup_at, "cleanup", True, cover, record)

    @staticmethod
    def _merge_fn_state(target: WindowRecord, sources: list[WindowRecord]) -> None:
        """Per-window function state of merged windows: values of a name that exists in
        several windows wait (as a list) until ``Context.window_state`` merges them with the
        descriptor — which no snapshot could carry."""
        store = target.fn_state
        for src in sources:
            for name, value in src.fn_state.items():
                if name.startswith(PENDING_MERGE):
                    store.setdefault(name, []).extend(value)
                elif name not in store:
                    store[name] = value
                else:
                    store.setdefault(PENDING_MERGE + name, []).append(value)

    def _retire(self, window: Any) -> None:
        """Drop a window that was late on arrival and merged with nothing."""
        assert self.merging is not None
        if window not in self.records:
            self.merging.pop(window, None)
