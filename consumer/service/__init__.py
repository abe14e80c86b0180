"""The batch processor and the handlers around it: validation, commands, retention, compaction."""
