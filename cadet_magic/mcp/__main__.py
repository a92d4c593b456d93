"""``python -m cadet_magic.mcp --db URL [--model SPEC] [--base-url URL] [--share LEVEL]``: an
MCP server over stdio answering questions about one database (see :mod:`cadet_magic.mcp`)."""

from __future__ import annotations

import sys

from cadet_magic.mcp import main

if __name__ == "__main__":
    sys.exit(main())
