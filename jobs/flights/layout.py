"""Where the flights history lives under a data root (no heavy imports: DAG files load it)."""

DATA_PATH = "data/flights"
PARTITION = "arrival_hour"
