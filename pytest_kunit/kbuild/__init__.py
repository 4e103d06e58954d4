"""Kbuild's own records, read from a build directory: .cmd files, archives, ELF headers, suite tables, link lists.

Also what follows from them: the C locations of cases, and which suites a fragment's own kernel would hold."""
