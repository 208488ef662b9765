"""Simulated hosts and the demo: what tests and `make demo` drive the real hook with."""
