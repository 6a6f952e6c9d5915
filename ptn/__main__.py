"""``python -m ptn`` runs the ``ptn`` command (the same as ``python -m ptn.cli``)."""

from ptn.cli.entry import main

if __name__ == "__main__":
    main()
