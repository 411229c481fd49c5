"""windowlib: Flink's event-time windowing model for incremental batch on Spark.

The public names below are the contract of SPEC §9 (checked by ``tests/unit/test_exports.py``).
Importing ``windowlib`` is cheap: it loads only the pure-Python core; engines load on use.
"""

from windowlib import aggregates
from windowlib.core import batch as _batch_module
from windowlib.core import pipeline as _pipeline_module
from windowlib.core.assigners import (
    EventTimeSessionWindows,
    GlobalWindows,
    ProcessingTimeSessionWindows,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    WindowAssigner,
)
from windowlib.core.batch import BatchWindowFunction
from windowlib.core.calendar import CalendarWindows
from windowlib.core.errors import (
    DefinitionError,
    ExecutionError,
    InputError,
    QualityError,
    StateError,
    WindowlibError,
)
from windowlib.core.evictors import (
    CountEvictor,
    DeltaEvictor,
    Evictor,
    TimeEvictor,
    TimestampedValue,
)
from windowlib.core.functions import (
    AggregateFunction,
    Context,
    OutputTag,
    ProcessWindowFunction,
    WindowFunction,
)
from windowlib.core.pane import PaneInfo, Timing
from windowlib.core.pipeline import Pipeline
from windowlib.core.state import (
    ListStateDescriptor,
    ReducingStateDescriptor,
    ValueStateDescriptor,
)
from windowlib.core.time import Time
from windowlib.core.triggers import (
    All,
    Any,
    ContinuousEventTimeTrigger,
    ContinuousProcessingTimeTrigger,
    CountTrigger,
    DeltaTrigger,
    EventTimeTrigger,
    NeverTrigger,
    ProcessingTimeTrigger,
    PurgingTrigger,
    Trigger,
    TriggerResult,
)
from windowlib.core.watermarks import (
    BoundedOutOfOrderness,
    MonotonousTimestamps,
    ProcessingTimeLag,
    WatermarkStrategy,
)
from windowlib.core.windows import GlobalWindow, TimeWindow

__version__ = "0.1.0"



class _SparkEngine:
    """``Pipeline.run``/``explain`` on Spark, loaded on first use."""

    def run(self, pipeline: Pipeline, df: object, arrival: str, **options: object) -> object:
        from windowlib.engines.spark.engine import run_dataframe

        return run_dataframe(pipeline, df, arrival, **options)

    def explain(self, pipeline: Pipeline) -> str:
        from windowlib.engines.spark.engine import explain

        return explain(pipeline)


_pipeline_module.use_engine(_SparkEngine())


def _panes_table(columns: dict, element_fields: object) -> object:
    """Batch window functions' input tables (Arrow: loaded on first use)."""
    from windowlib.engines.batch_tables import panes_table

    return panes_table(columns, element_fields)  # type: ignore[arg-type]


_batch_module.use_table_builder(_panes_table)

__all__ = [
    "AggregateFunction", "All", "Any", "BatchWindowFunction", "BoundedOutOfOrderness",
    "CalendarWindows", "Context",
    "ContinuousEventTimeTrigger", "ContinuousProcessingTimeTrigger", "CountEvictor",
    "CountTrigger", "DefinitionError", "DeltaEvictor", "DeltaTrigger", "EventTimeSessionWindows",
    "EventTimeTrigger", "Evictor", "ExecutionError", "GlobalWindow", "GlobalWindows",
    "InputError", "ListStateDescriptor", "MonotonousTimestamps", "NeverTrigger", "OutputTag",
    "PaneInfo", "Pipeline", "ProcessWindowFunction", "ProcessingTimeLag",
    "ProcessingTimeSessionWindows", "ProcessingTimeTrigger", "PurgingTrigger", "QualityError",
    "ReducingStateDescriptor", "SlidingEventTimeWindows", "SlidingProcessingTimeWindows",
    "StateError", "Time", "TimeEvictor", "TimeWindow", "TimestampedValue", "Timing", "Trigger",
    "TriggerResult", "TumblingEventTimeWindows", "TumblingProcessingTimeWindows",
    "ValueStateDescriptor", "WatermarkStrategy", "WindowAssigner", "WindowFunction",
    "WindowlibError", "__version__", "aggregates",
]

# incremental runs: loaded on first use (they bring boto3, pyarrow and pyspark)
_LAZY = {
    "PartitionedSource": "windowlib.runs.source",
    "RunSummary": "windowlib.runs.summary",
    "run_incremental": "windowlib.runs.incremental",
    "read_firings": "windowlib.runs.outputs",
    "read_late": "windowlib.runs.outputs",
    "read_latest": "windowlib.runs.outputs",
    "read_rejects": "windowlib.runs.outputs",
    "open_table": "windowlib.runs.tables",
    "read_table": "windowlib.runs.tables",
    "register_tables": "windowlib.runs.tables",
    "sync_tables": "windowlib.runs.tables",
}
__all__ += sorted(_LAZY)


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'windowlib' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
