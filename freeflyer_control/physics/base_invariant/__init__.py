"""Jain & Rodriguez's base-invariant free-flyer dynamics (doc 004; DIGEST §6, with its errata).

Modules: ``spatial`` (angular-first spatial algebra and the one conversion to Pinocchio's
linear-first convention), ``tree`` (the paper's per-link data built from a Pinocchio model at a
configuration), ``sweeps`` (the P and S articulated-body sweeps, Lemma 3.2, Eq. 3.13, the
Upsilon recursion of Eq. 4.7 and Alg. 8). Pinocchio stays the engine of the plant; this is the
paper's formulation, cross-checked against Pinocchio in test/test_base_invariant.py, and the
fast way to get the operational-space inertia of every link at once.
"""
