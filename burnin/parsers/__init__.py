"""Pure parsers for the output of the tools the agent runs; no I/O here.

Each parser takes the tool's text and returns plain data, or raises
:class:`UnparseableOutput` saying what was expected, so a garbled or truncated output is a
failed check with evidence and never a silent pass.
"""


class UnparseableOutput(ValueError):
    """The tool printed something that is not the format we know."""
