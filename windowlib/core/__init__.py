"""The semantic core: plain Python (standard library and pendulum only).

Time and durations, windows and assigners, triggers (classic and FLIP-9 DSL), evictors
(FLIP-4), window functions and the FLIP-2 context, declarative aggregates, pane timing, the
lateness rules, and the per-key driver that runs SPEC §1's event loop. A test walks the imports
of this package and fails if it ever reaches Spark, boto3, Airflow or GX.
"""
