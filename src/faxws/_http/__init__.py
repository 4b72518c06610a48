"""HTTP for the clients: their options (:mod:`.options`, exported as
:class:`faxws.ClientOptions`), what both stacks share (:mod:`.shared`: the raw answer and the
transport seam, how a failed exchange is reported, the bounds of an answer's body, retry
decisions), then each stack's transport and caller (:mod:`.sync_transport` and
:mod:`.sync_caller` on requests and urllib3; :mod:`.async_transport` and :mod:`.async_caller`
on asyncio). The public side of the seam is :mod:`faxws.transport`."""
