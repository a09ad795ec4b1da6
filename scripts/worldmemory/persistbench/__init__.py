"""PersistBench: 360-degree omniscient references for 4D-model memory."""
