"""An MCP server: the agent for MCP clients (Claude Desktop, editors, agents), over stdio.

    python -m cadet_magic.mcp --db shop.duckdb [--model SPEC] [--base-url URL] [--share LEVEL]

``--db`` opens the database read-only (:mod:`.database`: a DuckDB or SQLite file, or a
SQLAlchemy URL); ``--model`` is a model spec as ``%%ask`` takes it (default ``CADET_MODEL``,
else the installed local model), ``--base-url`` its server, ``--share`` what of the database a
model may see (``schema``, ``stats``, ``samples``; also what the replies hold beyond the
answer's rows). The tools are :mod:`.server`'s ``ask`` and ``schema``. The ``mcp`` extra
installs the SDK (``pip install "cadet-magic[mcp]"``).

Example:
    >>> parser().parse_args(["--db", "shop.duckdb", "--share", "schema"]).share
    'schema'
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from cadet_magic.options import SHARE_LEVELS

__all__ = ["main", "parser", "serve"]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m cadet_magic.mcp",
        description="An MCP server over stdio answering questions about one database with "
        "cadet_magic's agent (one read-only query per question, checked, corrected, voted on).",
    )
    p.add_argument(
        "--db",
        required=True,
        metavar="URL",
        help="a DuckDB or SQLite file, duckdb:///PATH, sqlite:///PATH, or a SQLAlchemy URL",
    )
    p.add_argument(
        "--model",
        default=None,
        metavar="SPEC",
        help="model spec (openai:gpt-4o-mini, local, scripted:FILE ...); default CADET_MODEL, "
        "else the installed local model",
    )
    p.add_argument("--base-url", default=None, metavar="URL", help="the model server's URL")
    p.add_argument(
        "--share",
        default="samples",
        choices=SHARE_LEVELS,
        help="what of the database a model sees, and the replies hold beyond the answer's rows",
    )
    return p


def serve(
    db: str, model: str | None = None, base_url: str | None = None, share: str = "samples"
) -> Any:
    """Serves the MCP tools over stdio until the client closes the connection."""
    from cadet_magic.mcp.database import open_database
    from cadet_magic.mcp.server import build
    from cadet_magic.options import UNSET, merged

    options = merged(None, model=model or UNSET, base_url=base_url or UNSET, share=share)
    server = build(open_database(db), options)
    server.run("stdio")


def main(argv: list[str] | None = None) -> int:
    """The command line: one line on stderr and exit status 2 for what cannot be served."""
    from cadet_magic.errors import CadetError

    args = parser().parse_args(argv)
    try:
        import mcp  # noqa: F401 - the SDK, from the mcp extra
    except ImportError:
        print(
            'python -m cadet_magic.mcp needs the MCP SDK: pip install "cadet-magic[mcp]".',
            file=sys.stderr,
        )
        return 2
    try:
        serve(args.db, args.model, args.base_url, args.share)
    except CadetError as e:
        print(f"cadet_magic.mcp: {e}", file=sys.stderr)
        return 2
    return 0
