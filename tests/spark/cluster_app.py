"""One Spark application for ``test_cluster.py`` (run in a subprocess: the test process holds
the local session): ``python cluster_app.py MASTER OUTPUT_URI`` prints one JSON report.

On the cluster: which windowlib the executors import; a one-shot ``Pipeline.run`` whose
function lives in ``cluster_funcs`` before shipping it (the coded error) and after; reading a
committed S3 output with credential forwarding off, then on. Then the same one-shot run on a
new ``local[2]`` session of this process.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def one_shot(spark: Any) -> list:
    import cluster_funcs

    df = spark.createDataFrame(cluster_funcs.ROWS, cluster_funcs.SCHEMA)
    firings = cluster_funcs.pipeline().run(df, arrival="arrival", finalize=True).firings
    rows = firings.drop("run_id", "processing_time").collect()
    return sorted(json.dumps(r.asDict(), default=str, sort_keys=True) for r in rows)


def main(master: str, output: str) -> dict[str, Any]:
    import windowlib as wl
    from windowlib.core.errors import WindowlibError
    from windowlib.engines.spark.session import get_or_create_session
    from windowlib.engines.spark.shipping import ship_code
    from windowlib.state.taskfs import FORWARD_CONF

    report: dict[str, Any] = {}
    spark = get_or_create_session(master, app_name="windowlib-cluster-app")
    report["master"] = spark.conf.get("spark.master")
    report["executor_windowlib"] = sorted(set(
        spark.sparkContext.parallelize(range(4), 2)
        .map(lambda _: __import__("windowlib").__file__).collect()))
    try:
        one_shot(spark)
        report["unshipped"] = None
    except WindowlibError as exc:
        report["unshipped"] = str(exc)
    report["shipped"] = ship_code(spark, ["cluster_funcs"])
    report["cluster_rows"] = one_shot(spark)
    spark.conf.set(FORWARD_CONF, "false")
    try:
        report["read_without_credentials"] = wl.read_firings(output, spark=spark).count()
    except Exception as exc:   # reported to the test
        report["read_without_credentials"] = f"{type(exc).__name__}: {str(exc)[:3000]}"
    spark.conf.set(FORWARD_CONF, "auto")
    report["read_with_credentials"] = wl.read_firings(output, spark=spark).count()
    spark.stop()

    local = get_or_create_session("local[2]", app_name="windowlib-cluster-app-local")
    report["local_shipped"] = ship_code(local, ["cluster_funcs"], force=True)
    report["local_shipped_again"] = ship_code(local, ["cluster_funcs"], force=True)
    report["local_master"] = local.conf.get("spark.master")
    report["local_rows"] = one_shot(local)
    local.stop()
    return report


if __name__ == "__main__":
    print("REPORT " + json.dumps(main(sys.argv[1], sys.argv[2])))
