"""The `baton` command line."""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import version


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="baton", description="An async actor runtime for long multi-agent Claude pipelines."
    )
    parser.add_argument("--version", action="version", version=f"baton {version('baton')}")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `baton` console script; returns the process exit code."""
    parser = build_parser()
    parser.parse_args(argv)
    parser.print_help(sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
