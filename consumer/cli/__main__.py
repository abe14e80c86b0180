"""`python -m consumer.cli`: the same as the `memdedup` command."""

from consumer.cli.main import main

raise SystemExit(main())
