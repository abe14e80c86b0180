"""The `memdedup` command line: one module per command family."""
