"""The stop hook: the lean entry and preflight (`hook`, `preflight`), what a fire sees
(`context`), the dispatcher (`dispatch`) and the concerns it runs (`concerns/`)."""
