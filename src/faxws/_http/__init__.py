"""HTTP for the clients: what both stacks share (:mod:`.shared`: options, the raw answer, how a
failed exchange is reported, retry decisions), then each stack's transport and caller
(:mod:`.sync_transport` and :mod:`.sync_caller` on requests and urllib3;
:mod:`.async_transport` and :mod:`.async_caller` on asyncio)."""
