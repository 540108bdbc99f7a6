"""``python -m seqlab.cli``: the same command line as the ``seqlab`` script."""

from seqlab.cli import main

main()
