"""VM lifetimes: the VM table of a lifetime trace, the GBDT model of remaining lifetime with
reprediction from uptime, and the pool replay that LA-Binary, LAS, LAVA and LARS run on."""
