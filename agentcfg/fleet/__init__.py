"""Fleets: several members on one roadmap, each in a git worktree of its own. The step a member
leases (`steps`), the leases kept in git refs (`leases`), a member's record in its workspace
(`membership`), merging a member's branch back (`integrate`) and the fleet's own loop (`drive`)."""
