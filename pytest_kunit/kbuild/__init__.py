"""Kbuild's own records, read from a build directory: suite tables, link lists, C locations, suite membership."""
