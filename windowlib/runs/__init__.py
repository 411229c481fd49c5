"""Incremental runs: data frames in object storage, partitioned sources, run planning."""
