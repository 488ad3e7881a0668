"""`/wheelpin rebase|recheck|skip|build --from-run N` on a bot pull request, and `build`
on the dashboard issue for a head with no pull request (docs/design.md §1, "Commands"):
the comments that gave a command (one job however many times it was repeated), who may
give one (write access, read at most once a minute), and carrying it out: refused
without write access, not done on a closed pull request, nor a skip of a commit the
commenter did not see. Each comment gets its reaction: 👍 done, 😕 not done, 👀 with a reply when it changed
nothing (the pull request already proposed the head)."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable

from ..adapters import logs
from ..core.config.model import Component
from ..core.errors import WheelpinError
from ..loop.results import Status
from ..loop.runner import Reconciler
from .conversation import Conversation
from .jobs import Intake, Job, JobKind
from .shared import Shared
from .watchlist import Watched

log = logs.get_logger("wheelpin.serve")
WRITERS = ("admin", "maintain", "write")
PERMISSION_TTL = 60.0  # seconds a collaborator's permission is trusted once read
# Seconds a refusal on the dashboard is said once in, per sender and command: anyone who
# can comment on a public repository would otherwise spend the installation's writes (a
# comment and a reaction per refused comment; GitHub allows an installation's content
# writes by the hour, docs "Rate limits for the REST API", secondary limits). A pull
# request's refusal is said once per pull request already (say_once).
REFUSAL_PERIOD = 3600.0
Comment = tuple[int | None, str | None]  # the comment's id, and the commit its pull request proposed then

# a component's pass, asked by a command: (watched, component, rebase, recheck) → done
Pass = Callable[[Watched, str, bool, bool], bool]


class Commands:
    def __init__(self, *, queue: Intake, clock: Callable[[], float], shared: Shared | None = None) -> None:
        self.queue = queue
        self.clock = clock
        # a command job → the comments that gave it: one sender repeating a command
        # coalesces into one job, and every comment gets its reaction (with a database,
        # kept there: the replica that runs the job is seldom the one that heard it)
        self._comments: dict[Job, list[Comment]] = {}
        self._lock = threading.Lock()
        self.shared = shared
        # (repository, sender, command) → when the dashboard last said its refusal, without a
        # database (with one, the database keeps it for every replica: Shared.said_lately)
        self._refused_at: dict[tuple[str, str, str], float] = {}

    def heard(self, job: Job) -> None:
        """A delivery gave `job` (webhook threads)."""
        if self.shared is not None:
            self.shared.add_comment(job.key, job.comment, job.seen)
            return
        with self._lock:
            self._comments.setdefault(job, []).append((job.comment, job.seen))

    def forget(self, job: Job) -> None:
        if self.shared is not None:
            self.shared.drop_comments([number for number, _comment in self.shared.comments(job.key)])
            return
        with self._lock:
            self._comments.pop(job, None)

    def run(self, watched: Watched, job: Job, conversation: Conversation, component_pass: Pass, *, cause: str) -> bool:
        """Carry out `job`; the comments that gave it keep waiting for their reaction when it
        is to be tried again (a comment made meanwhile is after them)."""
        if self.shared is not None:
            kept = self.shared.comments(job.key)
            if self._carry_out(watched, job, [comment for _n, comment in kept], conversation, component_pass, cause):
                self.shared.drop_comments([number for number, _comment in kept])
                return True
            return False
        with self._lock:
            comments = self._comments.pop(job, [])
        done = False
        try:
            done = self._carry_out(watched, job, comments, conversation, component_pass, cause)
            return done
        finally:
            if not done:
                with self._lock:
                    self._comments[job] = comments + self._comments.get(job, [])

    def _carry_out(
        self,
        watched: Watched,
        job: Job,
        comments: list[Comment],
        conversation: Conversation,
        component_pass: Pass,
        cause: str,
    ) -> bool:
        reconciler = watched.reconciler
        if reconciler is None or job.number is None:
            return True
        if job.on_dashboard:
            return self._on_dashboard(watched, job, comments, conversation, component_pass)
        target = conversation.pull_target(job.number)
        prefix = reconciler.config.defaults.branch_prefix
        component = (
            reconciler.config.get(target.branch[len(prefix) :]) if target and target.branch.startswith(prefix) else None
        )
        if target is None or component is None:
            log.info("command.not_ours", number=job.number)
            return True

        def react(content: str) -> None:
            _react(conversation, comments, content)

        refused = self._refused(watched, conversation, job)
        if refused is not None:
            conversation.say_once(target.branch, key=f"refused-{job.sender}-{job.command}", text=refused)
            return True
        seen = comments[-1][1] if comments else None
        if not target.open:
            log.info("command.closed", number=job.number, command=job.command)
            react("confused")  # the pull request is closed: nothing to act on
            return True
        if job.command == "skip" and seen and target.commit and seen != target.commit:
            log.info("command.moved_on", seen=seen, now=target.commit)
            conversation.say_once(
                target.branch,
                key=f"moved-{job.sender}-{seen[:12]}",
                text=f"@{job.sender}: this pull request moved on to `{target.commit[:8]}` since "
                f"your comment (which saw `{seen[:8]}`); nothing was skipped. Comment "
                "`/wheelpin skip` again to skip the new commit.",
            )
            react("confused")
            return True
        log.info("command", sender=job.sender, command=job.command, target=component.name)
        if job.command == "build":
            said = self._reuse(reconciler, component, job)
            if said is not None:  # refused: the reply says why
                conversation.say_once(target.branch, key=f"build-{job.sender}-{job.run}", text=f"@{job.sender}: {said}")
                react("confused")
                return True
        if job.command == "skip":  # done once closed: the pass after it is a job of its own
            message = reconciler.skip(component, by=job.sender or "someone")
            log.info("command.done", result=message)
            react("+1")
            self.queue.put(Job(JobKind.COMPONENT, watched.repository, component.name), note=cause)
            return True
        if not component_pass(watched, component.name, job.command == "rebase", job.command == "recheck"):
            return False  # a transient failure: the retry reacts
        row = watched.rows.get(component.name)  # 👍 carried out; 😕 its pass failed (the PR says why)
        if row is not None and row.status.startswith(Status.NOTHING.value):  # said, not thanked for
            head = f"`{row.head[:8]}`" if row.head else "the upstream head"
            conversation.say_once(
                target.branch,
                key=f"nothing-{job.command}-{job.sender}-{row.head}",
                text=f"@{job.sender}: `/wheelpin {job.command}` changed nothing: this pull request "
                f"already proposes {head}, built and verified, on the current base.",
            )
            react("eyes")
            return True
        react("confused" if row is not None and row.status.startswith("failed") else "+1")
        return True

    def _on_dashboard(
        self, watched: Watched, job: Job, comments: list[Comment], conversation: Conversation, component_pass: Pass
    ) -> bool:
        """`/wheelpin build --from-run N [--component C]` on the dashboard issue: for a head
        with no pull request (its own build failed, say), the build taken from run N and the
        component's pass run. The component may go unnamed when the config has one."""
        reconciler = watched.reconciler
        assert reconciler is not None and job.number is not None
        if watched.dashboard_number is not None and job.number != watched.dashboard_number:
            log.info("command.not_ours", number=job.number)  # an issue that copied the marker
            return True

        def answer(content: str, text: str | None = None) -> None:
            if text is not None:
                reply = f"@{job.sender}: {text}"
                conversation.comment(
                    job.number or 0, reply, key=_reply_key(comments, reply), answering=_first(comments)
                )
            _react(conversation, comments, content)

        refused = self._refused(watched, conversation, job)
        if refused is not None:
            if self._said_lately(watched.repository, job):
                log.info("command.refused_quietly", sender=job.sender, command=job.command)
                return True
            conversation.comment(job.number, refused, key=_reply_key(comments, refused), answering=_first(comments))
            _react(conversation, comments, "confused")
            return True
        names = [c.name for c in reconciler.config.components]
        chosen = job.component or (names[0] if len(names) == 1 else None)
        component = reconciler.config.get(chosen) if chosen else None
        if component is None:
            answer("confused", f"say which component to build: `--component NAME`, one of {', '.join(names)}.")
            return True
        said = self._reuse(reconciler, component, job)
        if said is not None:
            answer("confused", said)
            return True
        if not component_pass(watched, component.name, False, False):
            return False  # a transient failure: the retry reacts
        row = watched.rows.get(component.name)
        answer("confused" if row is not None and row.status.startswith("failed") else "+1")
        return True

    @staticmethod
    def _reuse(reconciler: Reconciler, component: Component, job: Job) -> str | None:
        """`/wheelpin build --from-run N`: run N's artifacts become the build of the upstream
        head (ATOM's `source_run_id`); None when taken, else why not, in a sentence."""
        if job.run is None:
            return (
                "say which run to take the build from: `/wheelpin build --from-run RUN_ID` (the number in "
                "the run's address, …/actions/runs/RUN_ID)."
            )
        try:
            log.info("command.build", said=reconciler.reuse_run(component, run_id=job.run))
        except WheelpinError as exc:
            return f"run {job.run} was not taken as the build: {exc.message}"
        return None

    def _said_lately(self, repository: str, job: Job) -> bool:
        """Whether this sender's refusal of this command was said within REFUSAL_PERIOD
        (else it is now, and counted from now)."""
        key, now = (repository, job.sender or "", job.command or ""), self.clock()
        if self.shared is not None:  # every replica's: one refusal a period, whichever hears it
            return self.shared.said_lately("refused " + " ".join(key), REFUSAL_PERIOD)
        with self._lock:
            last = self._refused_at.get(key)
            if last is not None and now - last < REFUSAL_PERIOD:
                return True
            self._refused_at = {k: t for k, t in self._refused_at.items() if now - t < REFUSAL_PERIOD}
            self._refused_at[key] = now
        return False

    def _refused(self, watched: Watched, conversation: Conversation, job: Job) -> str | None:
        """What the sender is told when they may not give commands (write access), else None."""
        permission = self._permission(watched, conversation, job.sender or "")
        if permission in WRITERS:
            return None
        log.warning("command.refused", sender=job.sender, permission=permission, command=job.command)
        return (
            f"@{job.sender}: `/wheelpin {job.command}` needs write access to this repository (yours is "
            f"{permission}); nothing was done."
        )

    def _permission(self, watched: Watched, conversation: Conversation, login: str) -> str:
        """`login`'s access to the repository, read at most once a minute (a burst of
        comments costs one request; a change of access counts within the minute)."""
        now = self.clock()
        known = watched.permissions.get(login)
        if known is None or now - known[1] > PERMISSION_TTL:
            known = watched.permissions[login] = (conversation.permission_of(login), now)
        return known[0]


def _reply_key(comments: list[Comment], text: str) -> str | None:
    """What a reply is made once for: the comments it answers, and what it says (a command's
    job may run again after its reply landed unanswered; the same command given again in a
    new comment gets its own reply). None when no comment is known: nothing to tell apart."""
    answered = [str(comment) for comment, _seen in comments if comment is not None]
    return "-".join([*answered, hashlib.sha256(text.encode()).hexdigest()[:12]]) if answered else None


def _first(comments: list[Comment]) -> int | None:
    """The earliest of the comments a reply answers (ids grow as comments are made)."""
    return min((comment for comment, _seen in comments if comment is not None), default=None)


def _react(conversation: Conversation, comments: list[Comment], content: str) -> None:
    for comment, _seen in comments:
        if comment is not None:
            conversation.react(comment, content)
