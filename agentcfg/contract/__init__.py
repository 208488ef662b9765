"""A run's contract and the proof of its steps: the pure rules (`model`, `guard_model`)
and, on disk, the contract and receipts (`store`), sealed records (`seal`),
trusted verify lines (`trust`), guarded files (`guard`), baselines (`evidence`),
verify runs (`verify`), the re-proof at a run's end (`reprove`, `finals`) and `roadmap audit`."""
