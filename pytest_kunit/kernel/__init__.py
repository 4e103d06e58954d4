"""The kernel to build: its source tree, its configuration, compiler wrappers, `make`, the image it gives."""
