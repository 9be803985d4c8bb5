"""``python -m traveller_cli COMMAND ...`` is the ``traveller`` command."""

import sys

from traveller_cli.app import main

sys.exit(main())
