"""wheelpin: keeps the ROCm wheels inside container images current.

The loop (docs/design.md §1): observe upstream → build → verify → publish → diff → propose.
`bot.core` is pure, `bot.adapters` talk to the outside, `bot.app` is the service and
`bot.cli` the `wheelpin` command.
"""

__version__ = "0.1.0"
# The project's home, in one place: the schema's `$id`, the `#:schema` line of every config,
# the GitHub App's manifest and the bot's image label are made from it.
PROJECT_URL = "https://github.com/wheelpin/wheelpin"
SCHEMA_URL = "https://raw.githubusercontent.com/wheelpin/wheelpin/main/config/wheelpin.schema.json"
