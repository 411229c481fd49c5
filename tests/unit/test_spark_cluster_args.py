"""``infra.spark_cluster``: impossible sizes are refused before any process starts."""

from __future__ import annotations

import pytest

from infra.spark_cluster import main, start_cluster
from windowlib.core.errors import InputError

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("kwargs", [{"workers": 0}, {"workers": 17}, {"cores": 0},
                                    {"memory": "1x"}, {"memory": "g"}, {"memory": "-1g"}])
def test_impossible_sizes_are_argument_errors(kwargs, tmp_path):
    args = {"workers": 2, **kwargs}
    with pytest.raises(InputError) as err:
        start_cluster(args.pop("workers"), workdir=tmp_path / "c", **args)
    assert err.value.code == "CLUSTER_ARGUMENT_INVALID"
    assert not (tmp_path / "c").exists()          # nothing started, nothing written


def test_the_command_exits_2_with_the_code(capsys):
    assert main(["--workers", "0"]) == 2
    assert capsys.readouterr().err.startswith("[CLUSTER_ARGUMENT_INVALID]")
