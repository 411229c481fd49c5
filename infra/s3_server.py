"""Start a local S3-compatible server (SeaweedFS ``weed server``) on 127.0.0.1 for development.

    .venv/bin/python infra/s3_server.py [--port 8333] [--bucket windowlib] [--data .local/s3]

Data lives under ``.local/s3`` (kept between starts). Prints the ``AWS_*`` variables to export,
then serves until Ctrl-C (or SIGTERM), which stops the server and all its components.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from infra.local_s3 import LocalSeaweed  # noqa: E402
from infra.ports import is_port_free  # noqa: E402
from windowlib.core.errors import WindowlibError  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=8333, help="S3 port on 127.0.0.1 (0 = any free)")
    ap.add_argument("--bucket", default="windowlib", help="bucket to create (default windowlib)")
    ap.add_argument("--data", default=str(REPO / ".local" / "s3"), help="data directory")
    ap.add_argument("--access-key", default="windowlib")
    ap.add_argument("--secret-key", default="windowlib-local-secret")
    args = ap.parse_args(argv)
    if args.port and not is_port_free(args.port):
        print(f"port {args.port} on 127.0.0.1 is taken; pass --port 0 for a free one",
              file=sys.stderr)
        return 2
    server = LocalSeaweed(data_dir=Path(args.data).resolve(), access_key_id=args.access_key,
                          secret_access_key=args.secret_key, s3_port=args.port,
                          buckets=(args.bucket,))
    try:
        server.start()
    except WindowlibError as exc:
        server.stop()
        print(f"error: {exc}", file=sys.stderr)
        return 1
    env = server.env()
    print(f"SeaweedFS S3 on {server.endpoint_url} (data: {server.data_dir}, log: "
          f"{server.data_dir / 'weed.log'}), bucket s3://{args.bucket}")
    print("Use it from another shell with:\n")
    for key, value in env.items():
        print(f"  export {key}={value}")
    print(f"\n  e.g. checkpoint='s3://{args.bucket}/_windowlib/checkpoints'\n\nCtrl-C stops it.")
    sys.stdout.flush()

    def _stop(*_: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _stop)
    try:
        code = server.wait()
        print(f"weed exited with code {code}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nstopping ...")
        return 0
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
