"""Reference workflow for measuring memory in video world models (see README.md)."""
