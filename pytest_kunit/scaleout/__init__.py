"""Scale-out over pytest-xdist: who a process is, the batches each worker runs, the controller's image service."""
