"""The windowlib errors and the one registry of their codes and exit codes.

::

    WindowlibError                 base; ``code`` is a stable string, ``str(e) == "[CODE] message"``
    ├── DefinitionError            the caller's pipeline definition or arguments are invalid
    ├── InputError                 input (data, files, locations) the run cannot accept as a whole
    ├── ExecutionError             a user function, trigger or engine step failed at run time
    ├── StateError                 checkpoints, snapshots, outputs and the object store
    └── QualityError               the quality gate could not judge a run (nothing published)

Every code windowlib raises is registered exactly once in ``REGISTRY`` (the table below) with
the one class that raises it, the exit code of a process it ends, and a one-line meaning;
``docs/errors.md`` is generated from it (``docs/make_errors.py``) and
``tests/unit/test_error_registry.py`` walks the sources so that no code is raised unregistered
or by another class. Exit codes (``exit_code``, the only rule; the CLI, ``jobs/run_pipeline.py``
and the DAG tasks call it):

* ``EXIT_OK`` 0: success (also "nothing new");
* ``EXIT_USER`` 2: the call is wrong — arguments, definition, input data, or a checkpoint that
  needs an operator's decision (``--rebuild``, another windowlib version). Running it again
  unchanged fails the same way: DAG tasks fail without retry;
* ``EXIT_FAILED`` 1: the run failed — storage, the environment, a concurrent run, a bug,
  damaged state, or a blocked publish. Running again (after fixing the environment) may
  succeed: DAG tasks retry.

Rows that are merely bad (null timestamps, missing keys...) are never errors: they become
reject records with a reason (SPEC §7). Pure Python: this module imports only the standard
library.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


class WindowlibError(Exception):
    """Base class. ``code`` is stable across releases; the message is for humans."""

    code: str = "WINDOWLIB_ERROR"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return f"[{self.code}] {super().__str__()}"


class DefinitionError(WindowlibError, ValueError):
    """The pipeline definition or a call's arguments are invalid (before any data is read)."""

    code = "DEFINITION_INVALID"


class InputError(WindowlibError, ValueError):
    """Input the run cannot accept as a whole (single bad rows are rejected instead)."""

    code = "INPUT_INVALID"


class ExecutionError(WindowlibError, RuntimeError):
    """A user function, trigger or evictor misbehaved, or an engine step failed, at run time."""

    code = "EXECUTION_FAILED"


class StateError(WindowlibError, RuntimeError):
    """A snapshot, checkpoint, output or stored object cannot be written, read or used."""

    code = "STATE_INVALID"


class QualityError(WindowlibError, RuntimeError):
    """The quality gate could not judge a run, so the run does not publish."""

    code = "QUALITY_UNAVAILABLE"


EXIT_OK, EXIT_FAILED, EXIT_USER = 0, 1, 2
USER, FAILED = EXIT_USER, EXIT_FAILED   # short names for the table

ERROR_CLASSES: tuple[type[WindowlibError], ...] = (
    WindowlibError, DefinitionError, InputError, ExecutionError, StateError, QualityError)


@dataclass(frozen=True)
class ErrorCode:
    """One registered code: the class that raises it, the exit code of a process it ends
    (``EXIT_USER`` or ``EXIT_FAILED``) and what it means."""

    code: str
    error_class: type[WindowlibError]
    exit_code: int
    meaning: str


_D, _I, _X, _S, _Q = DefinitionError, InputError, ExecutionError, StateError, QualityError

# code, class, exit code, meaning (one line). A class's own default code is listed in its group:
# ``cls(message)`` without ``code=`` raises it; windowlib itself always passes a specific code.
_TABLE: tuple[tuple[str, type[WindowlibError], int, str], ...] = (
    ("WINDOWLIB_ERROR", WindowlibError, FAILED, "the base class's default code (never raised "
     "by windowlib itself)"),
    # --- DefinitionError: the definition or the arguments of a call --------------------------
    ("DEFINITION_INVALID", _D, USER, "DefinitionError's default code (never raised by "
     "windowlib itself)"),
    ("ACCUMULATION_INVALID", _D, USER, "an unknown accumulation mode, or the trigger and "
     "accumulation() name different ones"),
    ("ARGUMENT_INVALID", _D, USER, "an argument of the wrong kind or value (the message names "
     "it and what was expected)"),
    ("CALENDAR_UNIT_INVALID", _D, USER, "CalendarWindows with an unknown unit"),
    ("DEFINITION_UNDESCRIBABLE", _D, USER, "a custom trigger, evictor, function or strategy "
     "holds state its fingerprint cannot describe (give its class a describe())"),
    ("DEMO_ROOT_FOREIGN", _D, USER, "the demo's --root is a non-empty folder the demo did not "
     "create"),
    ("DURATION_INVALID", _D, USER, "a duration that cannot be parsed, is not whole ms, or has "
     "the wrong type"),
    ("FOLD_WITH_MERGING", _D, USER, "fold with merging (session) windows"),
    ("FUNCTION_ALREADY_SET", _D, USER, "a second window function on one pipeline"),
    ("GAP_NOT_POSITIVE", _D, USER, "a static session gap of zero or less"),
    ("KEY_INVALID", _D, USER, "invalid key columns: empty, repeated, the timestamp, or "
     "keyed/non-keyed calls mixed"),
    ("LATENESS_NEGATIVE", _D, USER, "allowed_lateness below zero"),
    ("NAME_INVALID", _D, USER, "a pipeline, job, run id or staged-prefix name outside its "
     "allowed characters"),
    ("NATIVE_UNSUPPORTED", _D, USER, "the native path was forced for a pipeline it cannot run"),
    ("PANES_UNSUPPORTED", _D, USER, "the pane path was forced for a pipeline it cannot run"),
    ("NO_WINDOW", _D, USER, "the pipeline has no window assigner"),
    ("NO_WINDOW_FUNCTION", _D, USER, "the pipeline has no window function"),
    ("OFFSET_INVALID", _D, USER, "a window offset not smaller than the size (or slide)"),
    ("PIPELINE_INVALID", _D, USER, "a module of jobs/pipelines/ does not export a matching JOB"),
    ("PIPELINE_UNKNOWN", _D, USER, "the named pipeline is not registered"),
    ("REGISTRY_MISSING", _D, USER, "the pipeline registry module cannot be imported"),
    ("SIZE_NOT_POSITIVE", _D, USER, "a window size or count of zero or less"),
    ("SLIDE_INVALID", _D, USER, "a slide that is not positive or exceeds the window size"),
    ("TIMEZONE_INVALID", _D, USER, "an unknown time zone"),
    ("TRIGGER_CANNOT_MERGE", _D, USER, "merging windows with a trigger that cannot merge"),
    # --- InputError: data, files and locations ------------------------------------------------
    ("INPUT_INVALID", _I, USER, "InputError's default code (never raised by windowlib itself)"),
    ("BUNDLE_INVALID", _I, USER, "run_bundles got something that is not a valid Bundle"),
    ("CLUSTER_ARGUMENT_INVALID", _I, USER, "a local Spark cluster of impossible size or memory"),
    ("COLUMN_MISSING", _I, USER, "the input lacks the timestamp, a key or a required column"),
    ("CONNECT_PORT_INVALID", _I, USER, "a Spark Connect port outside 1-65535"),
    ("CONNECT_URL_INVALID", _I, USER, "SPARK_REMOTE / remote= is not an sc://host:port URL"),
    ("CORRECTIONS_EXIST", _I, USER, "that flights corrections batch was already landed"),
    ("DATA_DIR_NOT_EMPTY", _I, USER, "a data builder was pointed at a foreign non-empty folder"),
    ("DATA_MARKER_INVALID", _I, USER, "the flights build marker names a file outside its folder"),
    ("DATA_MISSING", _I, USER, "landing files where there is no data (no history, partition or "
     "range)"),
    ("ENGINE_UNKNOWN", _I, USER, "an unknown engine name"),
    ("FORMAT_INVALID", _I, USER, "an unsupported source file format"),
    ("NO_PROCESSING_TIME", _I, USER, "processing-time windows got a bundle without a processing "
     "time"),
    ("PARTITION_NAME_INVALID", _I, USER, "a partition column name outside [A-Za-z0-9_]+"),
    ("PARTITION_PRECISION_MISMATCH", _I, USER, "a partition bound of another precision than "
     "the partitions (e.g. a day for hourly partitions)"),
    ("PARTITION_RANGE_REVERSED", _I, USER, "a partition range whose first value is after its "
     "last"),
    ("PARTITION_VALUE_INVALID", _I, USER, "a time partition value that is not ISO-8601"),
    ("SCHEMA_INVALID", _I, USER, "a source schema that cannot be parsed"),
    ("SCHEMA_MISMATCH", _I, USER, "a new input file does not fit the pipeline's recorded input "
     "schema (an incompatible type, or a column the pipeline reads is missing)"),
    ("SCHEMA_REQUIRED", _I, USER, "a source needs an explicit schema"),
    ("SOURCE_NOT_FOUND", _I, USER, "the source location does not exist (no folder; on S3 no "
     "object under the prefix): a wrong root or path, or no data landed yet"),
    ("TIMESTAMP_INVALID", _I, USER, "a value that is not a timestamp where one is required"),
    ("TIMESTAMP_TYPE_INVALID", _I, USER, "the event-time column's type cannot hold event times "
     "(use a timestamp, date, integer ms or ISO string column)"),
    ("AGGREGATE_TYPE_INVALID", _I, USER, "a declarative aggregate over a column of a type it "
     "cannot aggregate (sum/mean of a non-numeric column)"),

    ("URI_INVALID", _I, USER, "a location that is not a clean file:///abs/path or "
     "s3://bucket/prefix URI"),
    # --- ExecutionError: user functions, triggers and engine steps at run time ----------------
    ("EXECUTION_FAILED", _X, FAILED, "ExecutionError's default code (never raised by "
     "windowlib itself)"),
    ("CLUSTER_START_FAILED", _X, FAILED, "the local Spark standalone cluster did not start"),
    ("CONNECT_SERVER_FAILED", _X, FAILED, "the local Spark Connect server did not start"),
    ("DEMO_SETUP", _X, FAILED, "the demo could not prepare Airflow"),
    ("MODULE_UNAVAILABLE", _X, FAILED, "the Spark executors cannot import the module of the "
     "pipeline's functions"),
    ("AGGREGATE_OVERFLOW", _X, FAILED, "an integral (or decimal) sum, of a sum or mean "
     "aggregate, left the range of its column (names the aggregate)"),
    ("FUNCTION_FAILED", _X, FAILED, "a user function raised or returned something unusable "
     "(e.g. a dynamic session gap)"),
    ("KEY_STATE_LIMIT", _X, FAILED, "one key's buffered state exceeds max_key_state"),
    ("WORKER_MEMORY_EXCEEDED", _X, FAILED, "a Spark Python worker ran out of memory "
     "(spark.executor.pyspark.memory)"),
    ("WORKER_CRASHED", _X, FAILED, "a Spark Python worker exited unexpectedly (killed by the "
     "system, e.g. out of memory, or a native crash)"),
    ("WALKER_SORT_FAILED", _X, FAILED, "a Spark Python worker could not spill the rows it "
     "sorts to Spark's local directory (full or not writable)"),
    ("MERGE_INVALID", _X, FAILED, "a window merge cannot be done (a state that cannot merge, a "
     "merged window already late)"),
    ("OUTPUT_UNKNOWN", _X, FAILED, "internal: a row routed to an undeclared output"),
    ("RESULT_COLUMN_CONFLICT", _X, FAILED, "a window function returned a column windowlib sets"),
    ("RESULT_SCHEMA_MISMATCH", _X, FAILED, "a result row or side output value of a Python "
     "function does not fit its declared type (names field, key and window)"),
    ("SIDE_OUTPUT_UNDECLARED", _X, USER, "context.output got a tag with a schema that the "
     "function does not declare as an attribute"),
    ("TIMER_LOOP", _X, FAILED, "a trigger keeps registering timers at or before the current "
     "time"),
    # --- StateError: checkpoints, snapshots, outputs, object stores ---------------------------
    ("STATE_INVALID", _S, FAILED, "a checkpoint operation used out of protocol (StateError's "
     "default code)"),
    ("ACCESS_DENIED", _S, FAILED, "the file system refused to read or create a file"),
    ("CHECKPOINT_CONFLICT", _S, FAILED, "another run committed first; retrying continues from "
     "its commit"),
    ("CHECKPOINT_CORRUPT", _S, FAILED, "a commit record, manifest or state file is damaged"),
    ("CHECKPOINT_FORMAT_UNSUPPORTED", _S, USER, "the checkpoint was written in a format this "
     "windowlib cannot read"),
    ("CONSERVATION_VIOLATED", _S, FAILED, "a run's counts do not add up; nothing was published"),
    ("FINGERPRINT_MISMATCH", _S, USER, "the pipeline definition changed since the checkpoint "
     "(rebuild or revert)"),
    ("FRAME_EXISTS", _S, FAILED, "writing a frame to a location that already holds files"),
    ("OBJECT_KEY_INVALID", _S, FAILED, "an object-store key that is empty, absolute or escapes "
     "its root"),
    ("OUTPUT_IN_USE", _S, USER, "the output location belongs to another pipeline or "
     "checkpoint"),
    ("OUTPUT_NOT_FOUND", _S, USER, "reading an output no run has published to"),
    ("S3_ACCESS_DENIED", _S, FAILED, "S3 answered 403"),
    ("S3_BUCKET_NOT_FOUND", _S, FAILED, "the S3 bucket does not exist at that endpoint"),
    ("S3_CREDENTIALS_INVALID", _S, FAILED, "S3 rejected the credentials, or only half were "
     "given"),
    ("S3_CREDENTIALS_MISSING", _S, FAILED, "no AWS credentials found"),
    ("S3_ENDPOINT_INVALID", _S, FAILED, "the S3 endpoint is not http(s)://host[:port]"),
    ("S3_PROFILE_NOT_FOUND", _S, FAILED, "the AWS profile is not in the shared files"),
    ("S3_REQUEST_FAILED", _S, FAILED, "S3 refused a request (the message has its code)"),
    ("S3_SERVER_FAILED", _S, FAILED, "the local SeaweedFS server did not start"),
    ("S3_SETTINGS_INVALID", _S, FAILED, "unknown or invalid S3 settings"),
    ("S3_UNAVAILABLE", _S, FAILED, "S3 kept failing (5xx, throttling) after every retry"),
    ("S3_UNREACHABLE", _S, FAILED, "no connection to the S3 endpoint"),
    ("TABLE_UNAVAILABLE", _S, FAILED, "an output table cannot be published or read (files "
     "staged outside its root by an older windowlib, a table format error); the commit "
     "record stays the truth and readers keep working"),
    ("TABLE_VERSION_NOT_FOUND", _S, USER, "time travel to a version or time that the output "
     "table does not hold"),
    ("SNAPSHOT_CORRUPT", _S, FAILED, "a snapshot value cannot be decoded"),
    ("SNAPSHOT_UNSERIALIZABLE", _S, FAILED, "window state holds a value that is not plain data"),
    ("SNAPSHOT_VERSION", _S, USER, "a snapshot of a format version this windowlib cannot read"),
    ("STAGING_MISSING", _S, FAILED, "publishing a staged run that is gone; run again"),
    ("STATE_SCHEMA_MISMATCH", _S, USER, "the saved state's key types or path differ from this "
     "run's (rebuild)"),
    # --- QualityError: the gate before publishing ----------------------------------------------
    ("QUALITY_UNAVAILABLE", _Q, FAILED, "validation is on but cannot run (GX missing or "
     "erroring); nothing published"),
)


def _build(rows: tuple[tuple[str, type[WindowlibError], int, str], ...]
           ) -> Mapping[str, ErrorCode]:
    out: dict[str, ErrorCode] = {}
    for code, cls, exit_, meaning in rows:
        if code in out:
            raise RuntimeError(f"error code {code} is registered twice")
        if exit_ not in (EXIT_USER, EXIT_FAILED):
            raise RuntimeError(f"error code {code}: exit code {exit_} is neither 1 nor 2")
        out[code] = ErrorCode(code, cls, exit_, meaning)
    return MappingProxyType(out)


REGISTRY: Mapping[str, ErrorCode] = _build(_TABLE)
"""Every code, once: ``REGISTRY[code].error_class / .exit_code / .meaning``."""


def exit_code(exc: BaseException) -> int:
    """The exit code of a process that ``exc`` ends: the registered code's (``EXIT_USER`` 2 or
    ``EXIT_FAILED`` 1); a code nobody registered (a user's own) follows its class
    (``DefinitionError``/``InputError`` 2, others 1); anything not a ``WindowlibError`` is 1."""
    if not isinstance(exc, WindowlibError):
        return EXIT_FAILED
    entry = REGISTRY.get(exc.code)
    if entry is not None:
        return entry.exit_code
    return EXIT_USER if isinstance(exc, DefinitionError | InputError) else EXIT_FAILED


_REBUILD_MARK = "start a new state generation (a rebuild"


def rebuild_hint(pipeline: str | None = None) -> str:
    """The one wording of "start over" in error messages: a rebuild (SPEC §8), as the command of
    a registered job (runnable as written at the default root; the CLI and
    ``jobs/run_pipeline.py`` print it with the root they ran with) and as the API call."""
    name = pipeline or "NAME"
    return (f"{_REBUILD_MARK}, published only when complete): "
            f"`windowlib backfill --pipeline {name} --rebuild` for a registered job, or "
            "`wl.run_incremental(..., rebuild=True)`")


def suggests_rebuild(exc: BaseException) -> bool:
    """Whether ``exc``'s message suggests a rebuild (it contains ``rebuild_hint``)."""
    return isinstance(exc, WindowlibError) and _REBUILD_MARK in str(exc)


def is_user_error(exc: BaseException) -> bool:
    """Whether ``exc`` is the caller's to fix (``exit_code(exc) == EXIT_USER``): no retry."""
    return exit_code(exc) == EXIT_USER


__all__ = ["ERROR_CLASSES", "EXIT_FAILED", "EXIT_OK", "EXIT_USER", "REGISTRY",
           "DefinitionError", "ErrorCode", "ExecutionError", "InputError", "QualityError",
           "StateError", "WindowlibError", "exit_code", "is_user_error", "rebuild_hint",
           "suggests_rebuild"]
