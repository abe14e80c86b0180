"""Decision logic: exact, recent and semantic checks, guards, alignment, thresholds, merges."""
