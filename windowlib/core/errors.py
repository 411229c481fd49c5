"""The windowlib error hierarchy. Every error carries a stable ``code`` a caller can branch on.

::

    WindowlibError                      base; ``code`` is a stable string (WINDOWLIB_ERROR)
    ├── DefinitionError                 a pipeline cannot be built as written (build time)
    │     codes: DEFINITION_INVALID (default), DURATION_INVALID, SIZE_NOT_POSITIVE,
    │            SLIDE_INVALID, GAP_NOT_POSITIVE, OFFSET_INVALID, LATENESS_NEGATIVE,
    │            TRIGGER_CANNOT_MERGE, FOLD_WITH_MERGING,
    │            NO_WINDOW, NO_WINDOW_FUNCTION, FUNCTION_ALREADY_SET,
    │            KEY_INVALID, NAME_INVALID, ACCUMULATION_INVALID, TIMEZONE_INVALID,
    │            CALENDAR_UNIT_INVALID, ARGUMENT_INVALID, NATIVE_UNSUPPORTED,
    │            REGISTRY_MISSING
    ├── InputError                      input the engine cannot accept as a whole
    │     codes: INPUT_INVALID (default), BUNDLE_INVALID, NO_PROCESSING_TIME,
    │            TIMESTAMP_INVALID, ENGINE_UNKNOWN,
    │            COLUMN_MISSING, ARGUMENT_INVALID, PARTITION_NAME_INVALID, FORMAT_INVALID,
    │            SCHEMA_REQUIRED, SCHEMA_INVALID, URI_INVALID, PARTITION_VALUE_INVALID,
    │            CONNECT_PORT_INVALID, CONNECT_URL_INVALID
    ├── ExecutionError                  a user function or trigger misbehaved at run time
    │     codes: EXECUTION_FAILED (default), RESULT_COLUMN_CONFLICT, TIMER_LOOP,
    │            FUNCTION_FAILED, STATE_INVALID,
    │            GAP_NOT_POSITIVE, KEY_STATE_LIMIT, RESULT_SCHEMA_MISMATCH,
    │            CONNECT_SERVER_FAILED, VALIDATION_ERROR, OUTPUT_UNKNOWN
    └── StateError                      checkpoints and snapshots
          codes: SNAPSHOT_UNSERIALIZABLE, SNAPSHOT_VERSION, SNAPSHOT_CORRUPT,
                 FINGERPRINT_MISMATCH, CHECKPOINT_CONFLICT, CHECKPOINT_CORRUPT,
                 CHECKPOINT_FORMAT_UNSUPPORTED, STATE_SCHEMA_MISMATCH, STATE_INVALID,
                 CONSERVATION_VIOLATED, STAGING_MISSING, OUTPUT_NOT_FOUND, OUTPUT_IN_USE,
                 FRAME_EXISTS, KEY_INVALID, NAME_INVALID, URI_INVALID, URI_UNSUPPORTED,
                 ACCESS_DENIED, S3_BUCKET_NOT_FOUND, S3_ACCESS_DENIED,
                 S3_CREDENTIALS_INVALID, S3_CREDENTIALS_MISSING, S3_UNREACHABLE,
                 S3_UNAVAILABLE, S3_REQUEST_FAILED, S3_ENDPOINT_INVALID, S3_SETTINGS_INVALID,
                 S3_PROFILE_NOT_FOUND, S3_SERVER_FAILED

Rows that are merely bad (null timestamps, missing keys...) are never errors: they become
reject records with a reason (SPEC §7).
"""

from __future__ import annotations


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
    """The pipeline definition is invalid; raised while it is being built."""

    code = "DEFINITION_INVALID"


class InputError(WindowlibError, ValueError):
    """Input the engine cannot accept (as opposed to single bad rows, which are rejected)."""

    code = "INPUT_INVALID"


class ExecutionError(WindowlibError, RuntimeError):
    """A user function, trigger or evictor misbehaved while the pipeline ran."""

    code = "EXECUTION_FAILED"


class StateError(WindowlibError, RuntimeError):
    """A snapshot or checkpoint cannot be written, read or used."""

    code = "STATE_INVALID"
