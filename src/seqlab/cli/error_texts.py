"""The option errors the commands and the library word in English, read back into the run's language.

A usage error's text after ``Invalid value for '--option':`` comes from three places: our option
parsers (already in the run's language, :mod:`seqlab.cli.options`), a command's own check, or the
library's :class:`~seqlab.errors.SeqlabError` (the library never knows the output language). The
commonest of the last two are listed here as English templates (data only, so that
:mod:`seqlab.cli.language` imports it without a cycle); :func:`seqlab.cli.language.translate_error`
reads a message against them and words it again from the ``cli`` catalogue, keeping the
values it read (paths, numbers, option names). A message not listed stays in English.
"""

from __future__ import annotations

ERRORS_DOMAIN = "cli"

#: English templates of option errors, most specific first; a field matches any text.
ERROR_MESSAGES = (
    "{what} would need about {size} (mostly {largest}); this machine has {available} available, of which seqlab "
    "uses at most {share} ({bytes} bytes against {available_bytes})",
    "text file {path} does not exist; expected a UTF-8 text file or '-' for stdin",
    "text file {path} is a directory; expected a UTF-8 text file",
    "text file {path} is empty; expected some UTF-8 text",
    "text file {path} is {size} bytes; expected at most {limit} bytes",
    "text file {path} contains only whitespace ({count} characters); expected some text",
    "give either --text or --tokens, not both",
    "expected one of {choices}; received {value}",
    "expected one of {choices}, received {value}",
    "expected integers >= {minimum} separated by commas, received {text}",
    "expected a comma-separated list, received {text}",
    "expected integers >= 1, received {token} in {text}",
    "expected an integer >= 1, received {token} in {text}",
    "the folder {folder} does not exist, received {path}",
    "the folder of {path} does not exist",
    "cannot write {path}: {reason}",
    "plots need matplotlib (pip install matplotlib)",
    "compare needs a text of at least 2 tokens; {source} has {count}",
)

