"""Image cleanup (loop/prune.py) reads each pin file of each branch once a pass, however
many components it prunes: the pass's `Reads` (loop/context.py) answers the second
component from what the first read, and a new pass reads again."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

from bot.adapters.imagestore import ImageStore
from bot.adapters.statefile import StateFile
from bot.adapters.upstream import UpstreamRepo
from bot.core.config.load import load_config_text
from bot.core.config.model import Author
from bot.core.decide.plan import Facts
from bot.core.image.reference import ImageRef
from bot.loop.context import Context, Memory, Reads
from bot.loop.prune import Pruner
from tests.fixtures.fakes import MemoryPlatform, MemoryStores, ScriptedBuilder

COMPONENT = """
[[component]]
name = "{name}"
upstream = {{ repo = "../upstream", branch = "main" }}
wheel = {{ distribution = "{name}" }}
build = {{ command = ["true"] }}
image = {{ repository = "registry.test/rocm/{name}", tag = "{name}-g{{sha8}}", prune_after_days = 7 }}
pins = [{{ file = "{file}", image_arg = "{arg}" }}]
"""


class CountedPlatform(MemoryPlatform):
    """The in-memory downstream, counting each file it is asked for."""

    def __init__(self, files: dict[str, str], *, author: Author) -> None:
        super().__init__(files, author=author)
        self.asked: Counter[tuple[str, str]] = Counter()

    def read_file(self, commit: str, path: str) -> str | None:
        self.asked[(commit, path)] += 1
        return super().read_file(commit, path)


def test_each_branchs_pin_files_are_read_once_a_pass_for_every_component_pruned(tmp_path: Path) -> None:
    text = "".join(
        COMPONENT.format(name=name, file=file, arg=arg)
        for name, file, arg in [
            ("lmcache", "docker/Dockerfile", "LMCACHE_IMAGE"),
            ("mooncake", "docker/Dockerfile", "MOONCAKE_IMAGE"),
            ("aiter", "docker/Dockerfile.rocm", "AITER_IMAGE"),
        ]
    )
    loaded = load_config_text(text, path=tmp_path / "wheelpin.toml", root=tmp_path, exists=None)
    dockerfile = 'ARG LMCACHE_IMAGE="x"\nARG MOONCAKE_IMAGE="y"\nFROM scratch\n'
    platform = CountedPlatform(
        {"docker/Dockerfile": dockerfile, "docker/Dockerfile.rocm": 'ARG AITER_IMAGE="z"\n'},
        author=loaded.config.defaults.author,
    )
    # a second branch, as a proposal's: its pin files are read too
    platform.refs["refs/heads/wheelpin/lmcache"] = platform.commit(
        platform.refs["refs/heads/main"],
        {"docker/Dockerfile": dockerfile.replace('"x"', '"x2"')},
        "bot@example.org",
        "bump",
    )
    reads, stores, state = Reads(platform), MemoryStores(), StateFile(tmp_path / "state.sqlite")
    pruner = Pruner(loaded.config, platform, state, Memory(), reads)

    def prune_all() -> None:
        for component in loaded.config.components:
            # the in-memory store deletes nothing, and has no tag to delete here
            store: ImageStore = stores.store(ImageRef.parse(component.image.repository))  # type: ignore[assignment]
            context = Context(
                component,
                UpstreamRepo(component.upstream, cache=tmp_path, root=tmp_path),
                store,
                ScriptedBuilder(lambda c: []),
                "wheelpin/" + component.name,
            )
            assert pruner.prune(context, Facts(component=component.name, head=None), time.time()).tags == []

    prune_all()
    # two branches (main and the proposal), two pin files each, for three components: four reads
    assert len(platform.asked) == 4 and set(platform.asked.values()) == {1}
    reads.new_pass()
    prune_all()
    assert set(platform.asked.values()) == {2}  # a new pass reads anew
    state.close()
