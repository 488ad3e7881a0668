"""Step 7 of the loop (docs/design.md §1): superseded wheel images deleted, for a component
that asks it (`image.prune_after_days`; off by default). It runs when the component is at
rest, at most once every `PRUNE_EVERY`; `core/decide/prune.py` decides, this reads the world and
deletes. Reading is bounded: at most `MAX_BRANCHES` branches (each pin file of the config
read once per distinct commit and pass, whichever components are pruned) and `MAX_TAGS`
tags, else nothing is deleted and that is said.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

from ..adapters import logs
from ..adapters.platform import Platform
from ..adapters.referrers import detach_all
from ..adapters.statefile import StateFile
from ..core.config.model import Config
from ..core.config.templates import tag_pattern
from ..core.decide.plan import Facts
from ..core.decide.prune import PruneDecision, decide, pinned_words
from .context import Context, Memory, Reads

log = logs.get_logger("wheelpin.prune")
PRUNE_EVERY = 6 * 3600
MAX_BRANCHES = 300
MAX_TAGS = 5000
DAY = 86_400


@dataclass
class Pruned:
    tags: list[str] = field(default_factory=list)  # deleted
    notes: list[str] = field(default_factory=list)  # why something was not deleted


class Pruner:
    def __init__(self, config: Config, platform: Platform, state: StateFile, memory: Memory, reads: Reads) -> None:
        self.config = config
        self.platform = platform
        self.state = state
        self.memory = memory
        self.reads = reads  # a commit's pin files read once a pass, for every component pruned

    def due(self, context: Context, now: float) -> bool:
        if context.component.image.prune_after_days is None:
            return False
        last = self.state.pruned_at(context.name)
        return last is None or now - last >= PRUNE_EVERY or now < last

    def prune(self, context: Context, facts: Facts, now: float) -> Pruned:
        component = context.component
        assert component.image.prune_after_days is not None
        pinned = self._pinned_everywhere()
        if pinned is None:
            return Pruned(
                notes=[f"image cleanup skipped: the downstream has more than {MAX_BRANCHES} branches to read pins from"]
            )
        tags = context.store.list_tags()
        if len(tags) > MAX_TAGS:
            return Pruned(
                notes=[
                    f"image cleanup skipped: {context.store.name} has {len(tags)} tags, more than {MAX_TAGS} to look up"
                ]
            )
        ours = tag_pattern(component.image.tag, component=component.name)
        keep = {value for key, found in self.memory.published.items() if key[0] == component.name for value in found}
        if facts.image is not None:
            keep |= {facts.image.tag, facts.image.digest}
        decide_now = partial(
            decide,
            ours=ours,
            pinned=pinned,
            keep=keep,
            since=self.state.unpinned_since(component.name),
            now=now,
            grace_seconds=component.image.prune_after_days * DAY,
        )
        digests = self._digests(context, [tag for tag in tags if ours.match(tag)])
        decision = decide_now(digests)
        if decision.by_digest:  # what else names those digests decides: every tag is looked up
            digests |= self._digests(context, [tag for tag in tags if not ours.match(tag)])
            decision = decide_now(digests)
        pruned = self._remove(context, decision)
        self.state.record_unpinned(
            component.name, {tag: since for tag, since in decision.unpinned.items() if tag not in pruned.tags}, at=now
        )
        if decision.shared:
            pruned.notes.append(
                f"image cleanup kept {', '.join(decision.shared)}: another tag, pinned or not "
                "wheelpin's, names the same image"
            )
        return pruned

    def _pinned_everywhere(self) -> frozenset[str] | None:
        """The words of every pin file of the config on every branch; None past the bound."""
        heads = self.platform.branch_heads()
        if len(heads) > MAX_BRANCHES:
            return None
        files = sorted({pin.file for component in self.config.components for pin in component.pins})
        texts = []
        for commit in sorted(set(heads.values())):
            for path in files:
                if (text := self.reads.file_or_none(commit, path)) is not None:
                    texts.append(text)
        return pinned_words(texts)

    @staticmethod
    def _digests(context: Context, tags: list[str]) -> dict[str, str]:
        found = {tag: context.store.tag_digest(tag) for tag in tags}
        return {tag: digest for tag, digest in found.items() if digest is not None}

    def _remove(self, context: Context, decision: PruneDecision) -> Pruned:
        """Tags first, where the registry deletes a tag alone (a registry such as Docker
        Hub refuses to delete a manifest still tagged), then the digest, which on a
        registry without tag deletes (distribution) takes every tag naming it."""
        store, pruned = context.store, Pruned()
        for digest, tags in decision.by_digest.items():
            if store.tag_digest(tags[0]) != digest:
                continue  # moved since it was read: looked at again next time
            if store.delete(tags[0]):
                for tag in tags[1:]:
                    store.delete(tag)
                store.delete(digest)  # frees it; a registry that keeps untagged manifests may say no
            elif not store.delete(digest):
                pruned.notes.append(
                    f"image cleanup: {store.name} deletes no manifest (it answered 400 or 405; "
                    "a distribution registry needs storage.delete.enabled)"
                )
                break
            detach_all(store, digest)  # its provenance and SBOM name an image that is gone
            pruned.tags += tags
            log.info("image.pruned", digest=digest, tags=list(tags))
        return pruned
