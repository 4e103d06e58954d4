"""A guest's console, read: KTAP lines, cleaned text, oops reports, decoded stack traces."""
