"""``python -m cadet_magic.eval --data DIR --model SPEC [...]``: see :func:`main`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from cadet_magic.errors import CadetError
from cadet_magic.eval.evaluation import MODES, evaluate
from cadet_magic.options import DEFAULTS, AskOptions


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m cadet_magic.eval",
        description="Run text-to-SQL questions through cadet_magic's ask() and measure execution "
        "accuracy: first attempt, after self-correction, with the fallback.",
    )
    p.add_argument(
        "--data",
        required=True,
        metavar="DIR",
        help="Spider- or BIRD-layout folder (or its question JSON file); SQLite or "
        "DuckDB databases",
    )
    p.add_argument(
        "--model",
        required=True,
        metavar="SPEC",
        help="model spec, e.g. openai:qwen with --base-url, or scripted:PATH",
    )
    p.add_argument("--base-url", metavar="URL", help="an OpenAI-compatible server (.../v1)")
    p.add_argument(
        "--api-key",
        metavar="KEY",
        help="API key (default: the provider's variable; 'local' for a local server)",
    )
    p.add_argument("--limit", type=int, metavar="N", help="questions to run (a seeded sample)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="the sample's seed (0)")
    p.add_argument(
        "--feedback",
        default="targeted",
        metavar="MODE",
        help=f"{'|'.join(MODES)}, or several separated by commas (default targeted)",
    )
    p.add_argument("--temperature", type=float, default=0.0, help="sampling temperature (0)")
    p.add_argument(
        "--out",
        metavar="FILE.jsonl",
        help="results, one JSON line per question; an existing file is resumed",
    )
    p.add_argument("--report", metavar="FILE.md", help="the summary in Markdown (+ FILE.svg)")
    p.add_argument(
        "--max-attempts",
        type=int,
        default=DEFAULTS.max_attempts,
        help=f"SQL attempts per question ({DEFAULTS.max_attempts})",
    )
    p.add_argument(
        "--model-timeout",
        type=float,
        default=DEFAULTS.model_timeout,
        help=f"seconds per model call ({DEFAULTS.model_timeout:g})",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.limit is not None and args.limit < 1:
        print("error: --limit must be at least 1.", file=sys.stderr)
        return 2
    options = AskOptions(max_attempts=args.max_attempts, model_timeout=args.model_timeout)
    try:
        evaluate(
            args.data,
            args.model,
            base_url=args.base_url,
            api_key=args.api_key,
            limit=args.limit,
            seed=args.seed,
            feedback=args.feedback,
            out=args.out,
            report=args.report,
            temperature=args.temperature,
            options=options,
            progress=sys.stderr,
        )
    except CadetError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "\ninterrupted: run the same command again to resume (--out keeps the results).",
            file=sys.stderr,
        )
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
