"""Each kunitconfig fragment's kernel: the fragments a run collects, their builds, kernels shared or reused."""
