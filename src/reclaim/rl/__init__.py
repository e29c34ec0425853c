"""Learned placement of time-varying workloads (TVW-RL): the environment over the TVW replay, its
penalties, the policy and its REINFORCE training, equivalence classes and the DeepRM baseline.
torch and gymnasium (the extra reclaim[rl]) are imported only where needed."""
