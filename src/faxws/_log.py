"""The ``faxws`` logger. A library does not configure logging: it gets a NullHandler, and the
application decides where records go. Imported only by modules that log, so that
``import faxws`` and the command line's start-up do not pay for the logging package."""

import logging

logger = logging.getLogger("faxws")
logger.addHandler(logging.NullHandler())
