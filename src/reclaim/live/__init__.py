"""Live runs: a workload's applications as real processes under the agent, to compare with the
simulator's replay of the same workload."""
