"""What every stage uses of the host: child processes, the cache directory, its locks, progress lines."""
