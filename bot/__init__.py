"""wheelpin: keeps the ROCm wheels inside container images current.

The loop (docs/design.md §1): observe upstream → build → verify → publish → diff → propose.
`bot.core` is pure, `bot.adapters` talk to the outside, `bot.app` is the service and
`bot.cli` the `wheelpin` command.
"""

__version__ = "0.1.0"
