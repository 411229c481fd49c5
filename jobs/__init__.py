"""Concrete pipelines and their Spark entry points (see jobs/README.md)."""
