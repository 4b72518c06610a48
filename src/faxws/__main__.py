"""``python -m faxws``: the same as the ``faxws`` command."""

import sys

from faxws.cli import main

sys.exit(main())
