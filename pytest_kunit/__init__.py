"""pytest-kunit: Linux kernel KUnit test cases as pytest items."""

__version__ = "0.1.0"
