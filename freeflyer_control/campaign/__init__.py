"""Monte-Carlo campaigns: many dispersed closed-loop runs of the lockstep simulation.

A layer above :mod:`freeflyer_control.sim`: nothing below it knows campaigns exist. The
distributed engine (Dask ``distributed``) is imported only by :mod:`.engine`, and only when a
campaign runs (pip extra ``campaign``).
"""
