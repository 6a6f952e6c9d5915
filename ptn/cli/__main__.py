"""``python -m ptn.cli`` runs the ``ptn`` command."""

from ptn.cli.main import main

main()
