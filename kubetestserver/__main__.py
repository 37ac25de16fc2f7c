"""``python -m kubetestserver [--port 0] [--load FILE] [--kubeconfig PATH] [--validate]``: serve until SIGTERM."""

import sys

from .testserver import main

sys.exit(main())
