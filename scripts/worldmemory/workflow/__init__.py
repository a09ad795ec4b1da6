"""The Snakefile's Python side: launching Snakemake safely and checking a config before any job.

The top layer of the package: it may import the studies (to check their config blocks), and no
study imports it.
"""
