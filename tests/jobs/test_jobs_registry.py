"""The pipeline registry: discovery, validation of jobs, roots, sources and partition ranges."""

from __future__ import annotations

from datetime import timedelta

import pytest

import windowlib as wl
from jobs import registry
from jobs.registry import PipelineJob, SourceSpec
from windowlib.core.errors import DefinitionError, InputError

pytestmark = pytest.mark.unit

EXPECTED = {"clickstream_demo", "flights_carrier_ontime", "flights_daily_ny",
            "flights_departure_delay", "flights_rotations"}


def _pipeline(name: str = "tiny") -> wl.Pipeline:
    return (wl.Pipeline(name, timestamp="ts").key_by("key")
            .window(wl.TumblingEventTimeWindows.of("5 minutes"))
            .aggregate(wl.aggregates.count()))


def _job(**changes) -> PipelineJob:
    base = {"name": "tiny", "pipeline": _pipeline(), "source": SourceSpec("data/x", "arrival_hour"),
            "watermark": wl.BoundedOutOfOrderness(0)}
    return PipelineJob(**{**base, **changes})


def test_registry_discovers_one_job_per_module_named_like_it():
    jobs = registry.registry()
    assert set(jobs) == EXPECTED
    for name, job in jobs.items():
        assert job.name == job.pipeline.name == name
        job.pipeline.compile()


def test_every_job_builds_its_gx_expectations():
    import great_expectations as gx

    for job in registry.registry().values():
        built = job.build_expectations()
        assert built, job.name
        assert all(isinstance(e, gx.expectations.Expectation) for e in built)


def test_get_unknown_pipeline_lists_the_known_ones():
    with pytest.raises(DefinitionError) as err:
        registry.get("no_such_pipeline")
    assert err.value.code == "PIPELINE_UNKNOWN"
    for name in EXPECTED:
        assert name in str(err.value)


def test_locations_are_derived_from_the_root():
    job = registry.get("flights_departure_delay")
    assert job.locations("s3://lake-bucket/prod/") == (
        "s3://lake-bucket/prod/_windowlib/checkpoints",
        "s3://lake-bucket/prod/windows/flights_departure_delay")
    assert job.source.uri("file:///srv/lake") == "file:///srv/lake/data/flights"


@pytest.mark.parametrize("uri", ["http://x/y", "file://relative/path", "s3://", "s3://A_B/x",
                                 "s3://bucket/a/../b", "file:///srv/../etc", "file:///",
                                 "s3://key:secret@bucket/x", "s3://bucket/x?versionId=1",
                                 "/no/scheme", 42, "file:///srv/%2e%2e/etc",
                                 "s3://bucket/lake/%2E%2E/other", "s3://bucket/a%2fb",
                                 "file:///srv/lake%00"])
def test_invalid_roots_are_refused(uri):
    with pytest.raises(InputError) as err:
        registry.validate_root(uri)
    assert err.value.code == "URI_INVALID"


@pytest.mark.parametrize("uri", ["s3://KEY:SECRET@bucket/lake", "s3://KEY:SE/CRET@bucket/lake",
                                 "s3://bucket/lake?KEY=SECRET"])
def test_root_errors_never_echo_credentials(uri):
    with pytest.raises(InputError) as err:
        registry.validate_root(uri)
    assert "KEY" not in str(err.value) and "SECRET" not in str(err.value)
    assert "CRET" not in str(err.value)


def test_roots_are_normalised_by_the_one_uri_type():
    assert registry.validate_root("s3a://lake-bucket/prod/") == "s3://lake-bucket/prod"
    assert registry.validate_root("file:///srv//lake/") == "file:///srv/lake"


def test_default_root_follows_the_environment(monkeypatch):
    monkeypatch.delenv("WINDOWLIB_ROOT", raising=False)
    assert registry.default_root() == (registry.REPO / ".local" / "lake").as_uri()
    monkeypatch.setenv("WINDOWLIB_ROOT", "s3://lake-bucket/demo/")
    assert registry.default_root() == "s3://lake-bucket/demo"
    monkeypatch.setenv("WINDOWLIB_ROOT", "s3://lake-bucket/../x")
    with pytest.raises(InputError):
        registry.default_root()


@pytest.mark.parametrize("path", ["../data", "/abs", "data/../../x", "a//b", "da ta", ""])
def test_source_paths_stay_inside_the_root(path):
    with pytest.raises(DefinitionError):
        SourceSpec(path, "arrival_hour")


@pytest.mark.parametrize("changes, code", [
    ({"name": "Bad-Name"}, "NAME_INVALID"),
    ({"name": "other"}, "NAME_INVALID"),                 # differs from the pipeline's name
    ({"name": "backfill", "pipeline": _pipeline("backfill")}, "NAME_INVALID"),   # DAG ids
    ({"name": "maintenance", "pipeline": _pipeline("maintenance")}, "NAME_INVALID"),
    ({"retain_versions": 0}, "ARGUMENT_INVALID"),
    ({"retain_versions": True}, "ARGUMENT_INVALID"),
    ({"schedule": "0 * * *"}, "ARGUMENT_INVALID"),        # four fields
    ({"schedule": "61 * * * *"}, "ARGUMENT_INVALID"),     # no minute 61
    ({"schedule": "every hour"}, "ARGUMENT_INVALID"),
    ({"schedule": "0 9 * * MON-FUN"}, "ARGUMENT_INVALID"),
    ({"schedule": 3600}, "ARGUMENT_INVALID"),
    ({"schedule": timedelta(0)}, "ARGUMENT_INVALID"),     # Airflow: must be positive
    ({"schedule": timedelta(minutes=-5)}, "ARGUMENT_INVALID"),
    ({"lookback": -1}, "ARGUMENT_INVALID"),
    ({"partition_format": "YYYYMMDD"}, "ARGUMENT_INVALID"),
    ({"watermark": "10 minutes"}, "ARGUMENT_INVALID"),
    ({"expectations": ["not callable"]}, "ARGUMENT_INVALID"),
    ({"pipeline": wl.Pipeline("tiny").key_by("key")}, "NO_WINDOW"),
])
def test_invalid_jobs_fail_with_a_code(changes, code):
    with pytest.raises(DefinitionError) as err:
        _job(**changes)
    assert err.value.code == code


@pytest.mark.parametrize("schedule", ["@hourly", "@daily", "@weekly", "0 9 * * MON-FRI",
                                      "*/15 * * * *", "0 6 * * 1-5", "0 0 1 JAN,JUL *",
                                      "30 2 L * *", "@quarterly"])
def test_schedules_accept_what_airflow_accepts(schedule):
    """Airflow's own cron parsing decides (presets, names, ranges, ``L``), not a regex."""
    pytest.importorskip("airflow")
    assert _job(schedule=schedule).schedule == schedule


def test_a_timedelta_schedule_is_accepted_as_airflow_accepts_it():
    every = timedelta(minutes=30)
    job = _job(schedule=every)
    assert job.schedule == every and job.describe()["schedule"] == "0:30:00"


def test_partition_range_covers_the_interval_and_the_lookback():
    hourly = _job(lookback=3)
    assert hourly.partition_range("2013-01-01T10:00:00Z", "2013-01-01T11:00:00Z") == (
        "2013-01-01T07", "2013-01-01T10")
    assert hourly.partition_range("2013-01-01T00:00:00Z", "2013-01-02T00:00:00Z",
                                  lookback=0) == ("2013-01-01T00", "2013-01-01T23")
    daily = registry.get("flights_daily_ny")
    assert daily.partition_range("2013-03-10T05:00:00Z", "2013-03-11T05:00:00Z") == (
        "2013-03-09T05", "2013-03-11T04")
    with pytest.raises(DefinitionError):
        hourly.partition_range("2013-01-01T11:00:00Z", "2013-01-01T10:00:00Z")


def test_describe_is_json_and_names_the_fingerprint():
    import json

    for job in registry.registry().values():
        data = json.loads(json.dumps(job.describe(), default=str))
        assert data["fingerprint"] == job.pipeline.fingerprint
        assert data["source"]["partition"] == "arrival_hour"


def test_source_for_builds_a_partitioned_source_when_available():
    pytest.importorskip("windowlib.runs.source")
    source = registry.get("clickstream_demo").source_for("file:///srv/lake")
    assert "file:///srv/lake/data/clickstream" in repr(vars(source)) or \
        getattr(source, "uri", None) == "file:///srv/lake/data/clickstream"
