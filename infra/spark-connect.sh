#!/usr/bin/env bash
# Run a local Spark Connect server in the foreground (Ctrl-C or SIGTERM stops it).
#
#   infra/spark-connect.sh [--port 15002] [--master local[2]] [--conf spark.KEY=VALUE ...]
#
# It listens on 127.0.0.1 only, with UTC session time zone, 2 shuffle partitions and no UI
# (infra/spark_connect.py, SERVER_CONF). Python workers run the venv's python, so
# they import the same windowlib as clients. Clients connect with
#   SPARK_REMOTE=sc://127.0.0.1:15002   (or get_or_create_session(remote=...))
# which saves the 20-40 s JVM start of a fresh local session per process (e.g. Airflow tasks).
# Environment: PYTHON (default: the repo's .venv/bin/python).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
if ! command -v java >/dev/null 2>&1 && [ -z "${JAVA_HOME:-}" ]; then
  echo "spark-connect.sh: Java 17 is required (apt-get install -y openjdk-17-jre-headless)" >&2
  exit 1
fi
export PYSPARK_PYTHON="${PYSPARK_PYTHON:-$PY}"
export PYSPARK_DRIVER_PYTHON="${PYSPARK_DRIVER_PYTHON:-$PY}"
cd "$ROOT"
cd "$ROOT"
exec "$PY" -m infra.spark_connect "$@"
