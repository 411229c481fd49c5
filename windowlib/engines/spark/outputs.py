"""The outputs of a Spark run in the public schema (``core/outputs.py``), over the engine's own
frames.

A path builds its outputs as *parts*: a frame, the output(s) each row goes to (``route``), and
for every output the part feeds, its public columns as Column expressions over that frame
(``render``: the one place where internal values become public columns — epoch-ms window bounds
and clocks become timestamps, the run id is attached). Two ways to read them, from the same
expressions:

- ``SparkOutputs.frame(name)``: one output as a DataFrame (one-shot runs, ``Pipeline.run``);
- ``SparkOutputs.built_parts()``: every output at once, for a writer that routes rows by
  output in one pass (incremental runs: ``runs/run_outputs.py``).

A part may be *deferred* (``DeferredPart``: the outputs it feeds, and how to build it): it is
planned only when one of its outputs is read, so a one-shot run whose caller reads only the
firings never plans its late and rejects rows.

Besides the public outputs a part may feed ``state`` (the new pane state, in the path's own
format, ``state_kind``) and ``stats`` (``processed``: elements processed, summed).

``side_values(frame, tag)`` reads one tag's values out of a ``side_outputs`` frame (typed
columns for a tag declared with a schema, else ``value_json``): what ``side_output(tag)`` of a
one-shot result and ``read_side_outputs(output, tag=...)`` return.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from windowlib.core.outputs import (
    CLOCK_COLUMNS,
    OUTPUTS,
    RUN_ID,
    TAG,
    TIME_COLUMNS,
    VALUE_JSON,
    VALUE_TYPED,
    OutputColumns,
    side_output_columns,
)

__all__ = ["ROUTE_SEP", "DeferredPart", "OutputPart", "SparkOutputs", "no_side_outputs",
           "render", "side_values"]

ROUTE_SEP = "+"     # a row routed to "firings+state" goes to both outputs
STATE, STATS = "state", "stats"
ALL_OUTPUTS = (*OUTPUTS, STATE, STATS)


def render(names: OutputColumns, output: str, value: Callable[[str], Any], run_id: str | None,
           element: Callable[[str], Any] | None = None) -> list[tuple[str, Any]]:
    """``(name, Column)`` for each public column of ``output``: ``value(name)`` is the engine's
    internal value of a column (window bounds and clocks in epoch ms), ``element(name)`` that
    of an element's column (late and rejects; default ``value``)."""
    from pyspark.sql import functions as F

    out = []
    n_elements = len(names.elements) if output in ("late", "rejects") else 0
    for i, name in enumerate(names.of(output)):
        if i < n_elements:
            col = (element or value)(name)
        elif name == RUN_ID:
            col = F.lit(run_id).cast("string")
        elif name in TIME_COLUMNS:
            col = F.timestamp_millis(value(name))
        else:
            col = value(name)
        out.append((name, col))
    return out


def no_side_outputs(names: OutputColumns, key_types: Mapping[str, Any], run_id: str | None
                    ) -> list[tuple[str, Any]]:
    """The ``side_outputs`` columns of a path whose rows never go there (the native paths run
    no Python function): typed nulls, so the output exists with its schema."""
    from pyspark.sql import functions as F

    null = {**{c: F.lit(None).cast(key_types[c]) for c in names.keys},
            TAG: F.lit(None).cast("string"), VALUE_JSON: F.lit(None).cast("string"),
            **{c: F.lit(None).cast("long") for c in CLOCK_COLUMNS}}
    return render(names, "side_outputs", null.__getitem__, run_id)


def side_values(side: Any, tag: str) -> Any:
    """The values of side output ``tag`` in a ``side_outputs`` frame, as the columns
    ``core.outputs.side_output_columns`` names: the declared fields, or ``value_json``."""
    from pyspark.sql import functions as F

    typed = side.schema[VALUE_TYPED].dataType if VALUE_TYPED in side.columns else None
    fields = tuple(typed[tag].dataType.names) if typed is not None and tag in typed.names \
        else None
    rows = side.filter(F.col(TAG) == F.lit(tag))
    if fields is None:
        return rows.select(*side_output_columns(None))
    value = F.col(VALUE_TYPED).getField(tag)
    return rows.select(*[value.getField(name).alias(name)
                         for name in side_output_columns(fields)])


@dataclass(frozen=True)
class OutputPart:
    """Rows of one frame feeding one or more outputs. ``route`` is the output name of every
    row (a string) or a Column giving each row's output(s), ``ROUTE_SEP``-joined when a row
    feeds several (``multi``). ``columns[output]`` lists that output's ``(name, Column)``."""

    frame: Any
    route: Any
    columns: Mapping[str, Sequence[tuple[str, Any]]]
    multi: bool = False

    def feeds(self, output: str) -> bool:
        return output in self.columns

    def rows_of(self, output: str) -> Any:
        """The part's rows of ``output`` with its columns."""
        from pyspark.sql import functions as F

        frame = self.frame
        if isinstance(self.route, str):
            if output not in self.route.split(ROUTE_SEP):
                frame = frame.filter(F.lit(False))   # columns declared, no rows routed here
        else:
            hit = (F.array_contains(F.split(self.route, f"[{ROUTE_SEP}]"), F.lit(output))
                   if self.multi else self.route == F.lit(output))
            frame = frame.filter(hit)
        return frame.select(*[col.alias(name) for name, col in self.columns[output]])


class DeferredPart:
    """A part planned on first use: ``build()`` returns the ``OutputPart`` feeding
    ``outputs``. A one-shot run's late and rejects rows cost planning (Spark analyses every
    new frame) that a caller reading only the firings never needs; a routed write reads every
    part, so it builds them all."""

    def __init__(self, outputs: Sequence[str], build: Callable[[], OutputPart]) -> None:
        self.outputs, self._build, self._part = tuple(outputs), build, None

    @property
    def part(self) -> OutputPart:
        if self._part is None:
            self._part = self._build()
        return self._part

    def feeds(self, output: str) -> bool:
        return output in self.outputs

    def rows_of(self, output: str) -> Any:
        return self.part.rows_of(output)


@dataclass
class SparkOutputs:
    """Every output of one Spark run (see the module docstring). ``cached``: frames the run
    persisted, released by ``unpersist``; ``compute``: those whose count computes them all
    (``None``: each of them; a cached frame that another one reads is computed with it)."""

    columns: OutputColumns
    parts: list[OutputPart | DeferredPart]
    state_kind: str | None = None
    cached: list[Any] = field(default_factory=list)
    compute: list[Any] | None = None
    files: list[Any] = field(default_factory=list)   # ``walker_files.WalkerFiles`` read here

    def to_compute(self) -> list[Any]:
        """The cached frames to count so that every cached frame is computed."""
        return list(self.cached if self.compute is None else self.compute)

    def frame(self, output: str) -> Any:
        """One output (``firings``, ``late``, ``rejects``, ``side_outputs``, ``state`` or
        ``stats``) as a DataFrame."""
        if output not in ALL_OUTPUTS:
            raise KeyError(output)
        frames = [p.rows_of(output) for p in self.parts if p.feeds(output)]
        if not frames:
            raise KeyError(f"this run has no {output!r} output")
        out = frames[0]
        for other in frames[1:]:
            out = out.unionByName(other)
        return out

    def built_parts(self) -> list[OutputPart]:
        """Every part, the deferred ones built: what a writer routing every output in one
        pass reads."""
        return [p.part if isinstance(p, DeferredPart) else p for p in self.parts]

    def has(self, output: str) -> bool:
        return any(p.feeds(output) for p in self.parts)

    def side_output(self, tag: str) -> Any:
        """The values of side output ``tag`` as a DataFrame (``side_values``)."""
        return side_values(self.frame("side_outputs"), tag)

    def unpersist(self) -> None:
        """Release what the outputs are read from: the persisted frames and the written
        files (after which the outputs cannot be read)."""
        for frame in self.cached:
            frame.unpersist()
        for written in self.files:
            written.release()
