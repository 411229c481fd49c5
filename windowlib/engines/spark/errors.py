"""Errors raised inside Spark tasks, turned back into windowlib errors on the driver.

A windowlib error raised in a Python worker (``ExecutionError(KEY_STATE_LIMIT)``, a
``RESULT_COLUMN_CONFLICT``...) reaches the driver as Spark's ``PythonException`` whose message
holds the worker's traceback. ``reraise(exc)`` finds the last windowlib error in it and raises
the same class with the same code and message; any other exception is re-raised unchanged.
"""

from __future__ import annotations

import re
from typing import NoReturn

from windowlib.core import errors as _errors

_PATTERN = re.compile(
    r"(?:windowlib\.core\.errors\.)?(WindowlibError|DefinitionError|InputError|ExecutionError|"
    r"StateError): \[([A-Z_]+)\] (.*)")


def windowlib_error(exc: BaseException) -> _errors.WindowlibError | None:
    """The windowlib error carried by a Spark task failure, or ``None``."""
    if isinstance(exc, _errors.WindowlibError):
        return exc
    text = str(exc)
    matches = list(_PATTERN.finditer(text))
    if not matches:
        return None
    name, code, message = matches[-1].groups()
    cls = getattr(_errors, name)
    return cls(message.strip(), code=code)


def reraise(exc: BaseException) -> NoReturn:
    """Raise the windowlib error inside ``exc`` (from ``exc``), or ``exc`` itself."""
    err = windowlib_error(exc)
    if err is None or err is exc:
        raise exc
    raise err from exc
