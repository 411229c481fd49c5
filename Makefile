# windowlib — the two commands a new machine needs: `make demo` and `make test`.
# Both set up .venv (locked dependencies) and Java 17 when missing.

VENV        := .venv
PY          := $(VENV)/bin/python
export PYSPARK_PYTHON        := $(abspath $(PY))
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))
export SPARK_LOCAL_IP        := 127.0.0.1
export PATH                  := $(abspath $(VENV))/bin:$(PATH)

.PHONY: setup test test-unit demo lint lock bench clean s3 airflow cluster

setup:
	@bash infra/bootstrap.sh

# The suite runs in TEST_WORKERS processes (pytest-xdist): much of it waits on JVM, server and
# subprocess starts, so two workers on two cores halve it. `--dist loadgroup` hands out test
# modules (split ones test by test) heaviest first, see tests/xdist_costs.py.
TEST_WORKERS ?= 2

test: setup
	@$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

test-unit: setup
	@$(PY) -m pytest -q -m unit $(PYTEST_ARGS)

# `make demo S3=1`: the lake on a local SeaweedFS server (started and stopped by the demo);
# DEMO_ARGS passes options through (e.g. DEMO_ARGS="--hours 2"; see python -m jobs.demo --help).
demo: setup
	@$(PY) -m jobs.demo $(if $(filter 1 yes true,$(S3)),--s3) $(DEMO_ARGS)

lint: setup
	@$(VENV)/bin/ruff check windowlib jobs dags tests benchmarks docs infra

bench: setup
	@$(PY) benchmarks/reference_engine.py

# Regenerate requirements.lock from pyproject.toml (needs the package registry).
lock: setup
	@$(VENV)/bin/uv pip compile pyproject.toml --all-extras --python-version 3.11 \
	    --override infra/uv-overrides.txt -o requirements.lock

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .ruff_cache

# A local S3-compatible server (SeaweedFS) on 127.0.0.1:8333, data in .local/s3; Ctrl-C stops it.
s3: setup
	@$(PY) infra/s3_server.py $(S3_ARGS)

# Airflow 3 (api-server, scheduler, dag-processor) on 127.0.0.1:8080 over dags/; prints the login.
airflow: setup
	@bash infra/airflow.sh $(AIRFLOW_ARGS)

# A Spark standalone cluster (a master and 2 workers of 1 core, 1g) on 127.0.0.1, each worker
# with its own work/local dirs; prints the master URL; Ctrl-C stops it. CLUSTER_ARGS passes
# options (e.g. CLUSTER_ARGS="--workers 3 --cores 2"; python -m infra.spark_cluster --help).
cluster: setup
	@$(PY) -m infra.spark_cluster $(CLUSTER_ARGS)
