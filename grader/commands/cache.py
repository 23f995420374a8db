"""`cache`: the reference cache (grader/refcache.py). `cache fill` builds the references of
the given labs once (a Slurm prep job runs it before an array), `cache info` lists the
entries, `cache clear` removes them."""

from __future__ import annotations

import argparse
import sys
import time

from .. import refcache
from ..paths import ROOT
from ._common import Subcommands, labs_or_say

HELP = "fill, list or clear the reference cache (the grader's reference executables)"


def add_parser(sub: Subcommands) -> argparse.ArgumentParser:
    p = sub.add_parser("cache", help=HELP, description=HELP)
    p.add_argument("action", choices=("fill", "info", "clear"))
    p.add_argument("--labs", nargs="*", default=[],
                   help="labs to fill, by number or folder (default: every lab)")
    p.add_argument("--cache", metavar="DIR", default=str(refcache.default_dir()),
                   help="the cache folder (default: %(default)s)")
    return p


def run(args: argparse.Namespace) -> int:
    store = refcache.Cache(args.cache)
    if args.action == "clear":
        print(f"removed {store.clear()} entries from {store.root}")
        return 0
    if args.action == "info":
        entries = store.info() if store.root.is_dir() else []
        print(f"{store.root}: {len(entries)} entries (GPU architectures here: {store.archs})")
        for e in entries:
            print(f"  {e['key']}  archs {e.get('archs')}  {e.get('bytes', 0) / 1e6:.1f} MB  "
                  f"{', '.join(f for f in e.get('files', []))}")
        return 0
    labs = labs_or_say("cache", args.labs)
    if labs is None:
        return 1
    start = time.monotonic()
    say = lambda text: print(text, file=sys.stderr, flush=True)
    try:
        found = store.fill(ROOT, labs, say=say)
    except (OSError, RuntimeError) as err:
        print(f"cache: {err}", file=sys.stderr)
        return 1
    for lab in labs:
        entry = found.get(lab.folder)
        print(f"{lab.folder}: {entry.path if entry else 'missing'}")
    print(f"cache ready in {time.monotonic() - start:.1f} s ({store.root})")
    return 0 if len(found) == len(labs) else 1
