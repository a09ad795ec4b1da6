"""WorldMemBench metrics, one module per dimension (Section 4)."""
