"""Findings on a boot's console: each case's outcome, sanitizer reports, the final scans, coverage."""
