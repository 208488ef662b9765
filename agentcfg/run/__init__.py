"""`agentcfg run`: the driver that starts the host, claims and lets it work until the run ends
(`driver`), how a host is started and stopped (`runners`), and the run's pure decisions
(`model`: the plan, the endings and their exit codes, from values only)."""
