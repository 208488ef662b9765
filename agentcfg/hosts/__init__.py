"""Agent hosts: one module a host behind the `base.Host` protocol, found through `registry`."""
