"""The local S3 server on a nearly full disk: SeaweedFS keeps accepting writes down to its
absolute floor (``min_free_mib``), whatever fraction of the disk that is, and a disk already
below the floor is refused at start with ``S3_SERVER_FAILED`` instead of hanging every write.

Each disk is a small tmpfs mounted for the test (skipped where mounting is not permitted).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from infra.local_s3 import LocalSeaweed
from windowlib.core.errors import StateError

pytestmark = pytest.mark.s3

MiB = 2**20


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Callable[[int], Path]]:
    mounted: list[Path] = []

    def mount(size_mib: int) -> Path:
        where = tmp_path / f"disk{len(mounted)}"
        where.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mib}m", "tmpfs",
                               str(where)], capture_output=True, text=True, check=False)
        if done.returncode:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
        mounted.append(where)
        return where

    yield mount
    for where in mounted:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _fill_leaving(disk: Path, leave_mib: float) -> None:
    free = shutil.disk_usage(disk).free
    with open(disk / "filler", "wb") as f:
        os.posix_fallocate(f.fileno(), 0, free - int(leave_mib * MiB))


def test_writes_work_with_less_than_one_percent_of_the_disk_free(small_disk) -> None:
    disk = small_disk(512)
    _fill_leaving(disk, 4)          # 0.8 % free: below SeaweedFS's own 1 % default
    usage = shutil.disk_usage(disk)
    assert usage.free < usage.total / 100
    server = LocalSeaweed(data_dir=disk / "s3", min_free_mib=1, buckets=("nearly-full",))
    with server:
        client = server.client()
        client.put_object(Bucket="nearly-full", Key="a/b.txt", Body=b"hello")
        assert client.get_object(Bucket="nearly-full", Key="a/b.txt")["Body"].read() == b"hello"


def test_a_disk_below_the_floor_is_refused_at_start_with_a_code(small_disk) -> None:
    disk = small_disk(64)
    server = LocalSeaweed(data_dir=disk / "s3", min_free_mib=128)
    with pytest.raises(StateError) as caught:
        server.start()
    assert caught.value.code == "S3_SERVER_FAILED"
    assert "MiB free" in str(caught.value) and "128 MiB" in str(caught.value)
    assert server._proc is None           # nothing was started, nothing is left running
