"""Booting guests (QEMU, or UML) for batches of cases until each case has an outcome."""
