#!/usr/bin/env python
"""Django's command-line utility for gangweb in a checkout (installed: the ``gangweb`` command)."""

from gangweb.command import main

if __name__ == "__main__":
    main()
