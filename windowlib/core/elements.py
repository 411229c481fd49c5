"""SPEC §1 step 2 for one element of one key: the element steps behind
``KeyDriver.process_element``.

``process_element`` is the general step (any assigner, trigger and window function). The
driver's plan (``logic.DriverPlan``) picks ``one_window_element`` instead when the assigner
gives every element exactly the one window that holds its event time
(``WindowAssigner.one_window_per_interval``, non-merging): the same steps for one window, and
the key's last window is reused while the key's elements stay inside it instead of being
assigned again. In both, the classic ``EventTimeTrigger``'s ``on_element`` (with
``WindowTriggerContext.register_event_time_timer``) runs inline. Both steps have the same
effects in the same order; the transcripts and differential tests run both.
"""

from __future__ import annotations

from typing import Any

from windowlib.core import copies
from windowlib.core.errors import WindowlibError
from windowlib.core.lateness import cleanup_time, is_late
from windowlib.core.records import EVENT, WindowRecord
from windowlib.core.runner import assignment_failed, function_failed, trigger_failed
from windowlib.core.time import MAX_TS
from windowlib.core.triggers.base import TriggerResult

_CONTINUE, _FIRE = TriggerResult.CONTINUE, TriggerResult.FIRE


def process_element(driver: Any, row: dict, ts_ms: int) -> bool:
    """Step 2 for one element of ``driver``'s key (a ``KeyDriver``). Returns False when it was
    dropped for every window (it is then sent to the late output)."""
    plan = driver._plan
    clock = driver.clock
    watermark = clock.watermark
    lateness, event_time = plan.lateness_ms, plan.event_time
    kept = False
    merging = driver.merging
    records, contents = driver.records, driver.contents
    ctx, event_timers = driver._ctx, driver._event_timers
    on_element, runner_add = plan.on_element, plan.runner_add
    try:
        windows = plan.assign(row, ts_ms, clock.processing_time)
    except WindowlibError:
        raise
    except Exception as exc:        # a user's assigner or dynamic gap function
        raise assignment_failed(driver.logic.assigner, driver.key_arg, ts_ms, exc) from exc
    if type(windows) is not list:
        windows = list(windows)
    # each window holds its own copy of the element, and its trigger sees that copy: a
    # function may change the elements it is given, and the first window may fire (and
    # change ``row``) before the next is filled
    pristine = copies.kept(row) if len(windows) > 1 else None
    for window in windows:
        if merging is not None:
            window = driver._add_merging_window(window)
            cleanup_at = cleanup_time(window.max_timestamp, lateness, event_time)
            if is_late(cleanup_at, watermark, event_time):
                driver._retire(window)
                continue
            state_window = merging[window]
        else:
            cleanup_at = cleanup_time(window.max_timestamp, lateness, event_time)
            if is_late(cleanup_at, watermark, event_time):
                continue
            state_window = window
        element = row if pristine is None or not kept else copies.kept(pristine)
        kept = True
        record = records.get(window)
        # A live record always holds its cleanup timer (registered when the record is
        # created, dropped only with the record), so only a new record needs one.
        new = record is None
        if new:
            record = records[window] = WindowRecord()
        try:
            contents[state_window] = runner_add(contents.get(state_window), element, ts_ms)
        except WindowlibError:
            raise
        except Exception as exc:        # the user's reduce/aggregate/fold
            raise function_failed(driver.logic.runner.spec.producer, driver.key_arg, window,
                                  exc) from exc
        record.pending = True
        if plan.event_time_trigger:
            # EventTimeTrigger.on_element and the context's timer registration, inlined
            max_ts = window.max_timestamp
            if max_ts <= watermark:
                driver._act(window, record, _FIRE, None, 0)
            else:
                owners = event_timers.get((max_ts, window))
                if owners is None or "trigger" not in owners:
                    driver.timer_op(EVENT, max_ts, "trigger", True, window, record)
        else:
            ctx.window, ctx.record = window, record
            try:
                result = on_element(element, ts_ms, window, ctx)
            except WindowlibError:
                raise
            except Exception as exc:
                raise trigger_failed(driver.logic.trigger, driver.key_arg, window,
                                     exc) from exc
            if result is not _CONTINUE:
                driver._act(window, record, result, None, 0)
        if (new or merging is not None) and cleanup_at != MAX_TS:
            owners = driver.timers[plan.domain].get((cleanup_at, window))
            if owners is None:
                driver.timer_op(plan.domain, cleanup_at, "cleanup", True, window, record)
            elif "cleanup" not in owners:
                owners.add("cleanup")   # what timer_op does for a known (time, window)
    if not kept:
        driver.sink.late_element(row, clock.watermark)
    return kept


def one_window_element(driver: Any, row: dict, ts_ms: int) -> bool:
    """``process_element`` for assigners that give each element exactly one window, the one
    holding its event time (non-merging): the key's last window is reused while its elements
    stay inside it. The same steps as ``process_element`` for one window."""
    # (start, end, window, cleanup time, max timestamp, its timer key)
    last = driver.last_window
    plan = driver._plan
    if last is None or not last[0] <= ts_ms < last[1]:
        try:
            (window,) = plan.assign(row, ts_ms, driver.clock.processing_time)
        except WindowlibError:
            raise
        except Exception as exc:        # a user's assigner
            raise assignment_failed(driver.logic.assigner, driver.key_arg, ts_ms, exc) from exc
        max_ts = window.max_timestamp
        last = driver.last_window = (window.start, window.end, window,
                                     cleanup_time(max_ts, plan.lateness_ms, True), max_ts,
                                     (max_ts, window))
    window = last[2]
    watermark = driver.clock.watermark
    cleanup_at = last[3]
    if cleanup_at <= watermark:     # is_late of an event-time window, inlined
        driver.sink.late_element(row, watermark)
        return False
    records, contents = driver.records, driver.contents
    record = records.get(window)
    new = record is None
    if new:
        record = records[window] = WindowRecord()
    try:
        contents[window] = plan.runner_add(contents.get(window), row, ts_ms)
    except WindowlibError:
        raise
    except Exception as exc:        # the user's reduce/aggregate/fold
        raise function_failed(driver.logic.runner.spec.producer, driver.key_arg, window,
                              exc) from exc
    record.pending = True
    event_timers = driver._event_timers
    if plan.event_time_trigger:
        # EventTimeTrigger.on_element and the context's timer registration, inlined
        max_ts = last[4]
        if max_ts <= watermark:
            driver._act(window, record, _FIRE, None, 0)
        elif new:
            # A live record's end-of-window timer was registered with the record (the
            # watermark never goes back, so it was before max_ts then too) and goes only by
            # firing (once the watermark passed max_ts) or with the record: only a new
            # record needs it.
            owners = event_timers.get(last[5])
            if owners is None or "trigger" not in owners:
                driver.timer_op(EVENT, max_ts, "trigger", True, window, record)
    else:
        ctx = driver._ctx
        ctx.window, ctx.record = window, record
        try:
            result = plan.on_element(row, ts_ms, window, ctx)
        except WindowlibError:
            raise
        except Exception as exc:
            raise trigger_failed(driver.logic.trigger, driver.key_arg, window, exc) from exc
        if result is not _CONTINUE:
            driver._act(window, record, result, None, 0)
    if new and cleanup_at != MAX_TS:
        # a live record always holds its cleanup timer: only a new one needs it
        owners = event_timers.get((cleanup_at, window))
        if owners is None:
            driver.timer_op(EVENT, cleanup_at, "cleanup", True, window, record)
        elif "cleanup" not in owners:
            owners.add("cleanup")   # what timer_op does for a known (time, window)
    return True
