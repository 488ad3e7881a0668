"""`wheelpin completion bash|zsh|fish`: a shell completion script made from the command's own
argparse parser, so it never drifts from the options. bash and zsh by shtab (PyPI); fish,
which shtab does not write, from the same parser here, as fish's `complete` builtin takes it
(fishshell.com/docs/current/cmds/complete.html)."""

from __future__ import annotations

import argparse
import shlex

SHELLS = ("bash", "zsh", "fish")


def completion_command(shell: str, parser: argparse.ArgumentParser) -> int:
    import sys

    if shell == "fish":
        sys.stdout.write(fish_script(parser))
    else:
        import shtab

        sys.stdout.write(shtab.complete(parser, shell=shell))
    return 0


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _helps(parser: argparse.ArgumentParser) -> dict[str, str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return {choice.dest: choice.help or "" for choice in action._choices_actions}
    return {}


def fish_script(parser: argparse.ArgumentParser, program: str = "wheelpin") -> str:
    """`complete` lines: each level's subcommands where the words typed so far lead there,
    then each command's long options with their help."""
    lines = [
        f"# fish completion for {program} (wheelpin completion fish > ~/.config/fish/completions/{program}.fish)",
        f"complete -c {program} -f",
    ]

    def walk(node: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        children = _subcommands(node)
        helps = _helps(node)
        names = " ".join(children)
        if path:
            seen = " && ".join(f"__fish_seen_subcommand_from {word}" for word in path)
            condition = f"{seen} && not __fish_seen_subcommand_from {names}" if children else seen
        else:
            condition = f"not __fish_seen_subcommand_from {names}"
        for name in children:
            lines.append(
                f"complete -c {program} -n {shlex.quote(condition)} -a {name} -d {shlex.quote(helps.get(name, ''))}"
            )
        if not children:
            for action in node._actions:
                for option in action.option_strings:
                    if option.startswith("--"):
                        takes = " -r" if action.nargs != 0 else ""
                        lines.append(
                            f"complete -c {program} -n {shlex.quote(condition)} -l {option[2:]}{takes} "
                            f"-d {shlex.quote((action.help or '').split(';')[0][:80])}"
                        )
        for name, child in children.items():
            walk(child, (*path, name))

    walk(parser, ())
    return "\n".join(lines) + "\n"
