"""On-node burn-in agent."""
