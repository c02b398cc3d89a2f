"""E1: async lock-free buffer vs default buffer under SCHED_DEADLINE (H1)."""
