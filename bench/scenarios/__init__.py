"""Benchmark scenarios: one module each (NAME, TITLE, run(args, tmp) -> (table, section))."""
