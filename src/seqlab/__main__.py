"""``python -m seqlab`` runs the command line, like the ``seqlab`` console script."""

from seqlab.cli import main

if __name__ == "__main__":
    main()
