"""What starts the real parts locally (SeaweedFS, a Spark Connect server, Airflow): used by the
tests, the demo and `make s3`/`make airflow`; not part of the windowlib library."""
