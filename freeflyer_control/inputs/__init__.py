"""User input, read and checked the same way by every front end: command-line options, campaign
specs, robot / object / testbed configs and node parameters. The lowest layer with the errors:
it imports nothing of the package but :mod:`freeflyer_control.errors`."""
