"""The notifier of the real-services test (``WINDOWLIB_NOTIFIER=wl_notifier:record``): each event
becomes one JSON line in ``$WL_NOTIFIER_FILE``, which the test reads back."""

from __future__ import annotations

import json
import os
from typing import Any


def record(event: dict[str, Any]) -> None:
    with open(os.environ["WL_NOTIFIER_FILE"], "a", encoding="utf-8") as out:
        out.write(json.dumps(event, sort_keys=True, default=str) + "\n")
