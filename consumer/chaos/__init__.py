"""Fault injection for drills and tests, off unless configured."""
