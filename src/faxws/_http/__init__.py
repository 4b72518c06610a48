"""HTTP for the clients: the options, what both stacks share, and each stack's transport and
caller (see the layout in docs/development.md). The public side of the seam is
:mod:`faxws.transport`."""
