"""``python -m ptn.cli`` runs the ``ptn`` command."""

from ptn.cli.entry import main

main()
