"""Triggers: Flink's built-ins (``classic``) and the FLIP-9 DSL (``dsl``)."""

from windowlib.core.triggers.base import PrefixedContext, Trigger, TriggerContext, TriggerResult
from windowlib.core.triggers.classic import (
    ContinuousEventTimeTrigger,
    ContinuousProcessingTimeTrigger,
    CountTrigger,
    DeltaTrigger,
    EventTimeTrigger,
    NeverTrigger,
    ProcessingTimeTrigger,
    PurgingTrigger,
)
from windowlib.core.triggers.dsl import (
    ACCUMULATION_MODES,
    AfterFirstElement,
    CountAtLeast,
    DslTrigger,
)
from windowlib.core.triggers.dsl import all_of as All
from windowlib.core.triggers.dsl import any_of as Any
from windowlib.core.triggers.end_of_window import AfterEndOfWindow

__all__ = [
    "ACCUMULATION_MODES", "AfterEndOfWindow", "AfterFirstElement", "All", "Any",
    "ContinuousEventTimeTrigger", "ContinuousProcessingTimeTrigger", "CountAtLeast",
    "CountTrigger", "DeltaTrigger", "DslTrigger", "EventTimeTrigger", "NeverTrigger",
    "PrefixedContext", "ProcessingTimeTrigger", "PurgingTrigger", "Trigger", "TriggerContext",
    "TriggerResult",
]
