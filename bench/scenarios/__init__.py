"""Benchmark scenarios: one module each, listed once in ALL (the order `--scenario all` runs
them in). Each declares

- NAME: what `--scenario` calls it and the key of its section in docs/benchmarks.md;
- TITLE: one line on what it measures (`{}` fields are filled by the scenario from its options);
- TOOLS: the programs it needs besides wrk, which run.py checks before anything starts (a
  tuple, or a function of the parsed arguments);
- JOTTER_ONLY: whether it needs `--jotter` (skipped when jotter is not among `--peers`);
- run(args, tmp) -> (table, section); optionally REPORTS_LOAD = True when its section says how
  busy the machine was itself.
"""
from scenarios import (bucket_upload, events, hello, http2, instructions, notes, peers, resumable, scale, sdk_upload,
                       sync, sync_engine, uploads)

ALL = (hello, notes, events, uploads, sdk_upload, instructions, peers, scale, http2, bucket_upload, resumable, sync,
       sync_engine)


def tools(scenario, args) -> tuple:
    """The programs `scenario` needs with these arguments."""
    return tuple(scenario.TOOLS(args) if callable(scenario.TOOLS) else scenario.TOOLS)


def summary(scenario) -> str:
    """`name  title` for --help, the title's `{}` fields shown as N."""
    import re
    return f"  {scenario.NAME:<14}{re.sub(r'[{][^}]*[}]', 'N', scenario.TITLE)}"
