"""Batch runs: N realms of one package, their k-of-N statistics and the batch report."""
