"""Deciding: the planner from observed facts to actions, with backoff and pruning policy."""
