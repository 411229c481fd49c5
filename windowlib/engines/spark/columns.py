"""Column names and phases of the Spark engine's tagged output (shared by the general path's
run planning, its walker in the Python workers, the native path and the test harness)."""

DEFAULT_MAX_KEY_STATE = 5_000_000
CHECK_EVERY = 4096
FLUSH_ROWS = 8192

KIND, B, PHASE, SUB, N = "__wl_kind", "__wl_b", "__wl_phase", "__wl_sub", "__wl_n"
ELEMENT, REASON = "__wl_element", "__wl_reason"
# pane state in/out (see state.py), side-output values, per-partition counts
STATE, NEXT_ET, NEXT_PT, SIZE, FORMAT = ("__wl_state", "__wl_next_et", "__wl_next_pt",
                                         "__wl_size", "__wl_format")
VALUE, SRC = "__wl_value", "__wl_src"
ABSENT = "__wl_absent"   # test hook: array<string> of columns absent from the element
from windowlib.core.outputs import RESULT_JSON  # noqa: E402  (re-exported)
PHASE_TIMERS_PT, PHASE_ELEMENTS, PHASE_TIMERS_WM, PHASE_FINISH = 0, 1, 2, 3
