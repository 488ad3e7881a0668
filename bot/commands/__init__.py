"""The handlers of `wheelpin` subcommands: parse nothing, print results, return exit codes."""
