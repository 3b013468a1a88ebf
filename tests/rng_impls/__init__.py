"""Tests of the counter-based RNG implementations in jext.rng_impls."""
