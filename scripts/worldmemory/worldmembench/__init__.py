"""WorldMemBench: memory of video world models under departure-and-revisit camera trajectories."""
