"""A checker and its runner, run together (grader/sandbox.py runs each): the grader's trusted
checker (the tests, Catch2 and the proxies of a lab's interface), outside the jail, and the
runner that carries out its calls in the student's object, in the jail, joined by a socket
pair (common/include/cml/remote.hpp)."""

from __future__ import annotations

import os
import socket
import threading
from dataclasses import dataclass
from pathlib import Path

from . import costs, sandbox
from .bwrap import Jail
from .channel import Channel
from .gate import StartGate
from .sandbox import Identity, Outcome


@dataclass
class PairOutcome:
    """A checker and its runner: the checker's outcome decides the report; the runner's says
    what became of the student's code."""

    checker: Outcome
    runner: Outcome


def run_pair(checker: list[str], runner: list[str], *, cwd: Path, timeout: float,
             env: dict[str, str], identity: Identity | None = None, jail: Jail | None = None,
             channels: list[Channel] | tuple[Channel, ...] = (),
             runner_channels: list[Channel] | tuple[Channel, ...] = (),
             syscalls: str | None = None, gate: StartGate | None = None) -> PairOutcome:
    """Runs a checker (the grader's tests, Catch2 and the proxies of a lab's interface:
    trusted, outside the jail, as the grader) and the runner that carries out its calls (the
    student's object: in `jail`, as `identity`, under `syscalls`), joined by a socket pair
    made here: the runner gets one end as `--fd N`, the checker the other as CML_RUNNER_FD.
    `channels` go to the checker (its report), `runner_channels` to the runner's command (a
    tool's log). Each gets a fresh folder of its own; both share `timeout`. The runner is
    stopped once the checker has ended (common/include/cml/remote.hpp).

    `gate`: the checker waits at its start gate (grader/gate.py; its command carries the
    gate's args) and the runner, the student's code, is started only once the gate has
    opened (never, when it is closed instead); the time limit counts from then."""
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    done = threading.Event()
    result: dict[str, Outcome] = {}
    errors: list[BaseException] = []

    def serve() -> None:
        try:
            if gate is not None:
                while not gate.opened.wait(0.1):
                    if gate.ended.is_set() or done.is_set():
                        result["runner"] = sandbox.Outcome(runner, None, False, 0.0, "")
                        return
            result["runner"] = sandbox.run([*runner, "--fd", str(theirs.fileno())], cwd=cwd,
                                           timeout=timeout, env=env, identity=identity,
                                           jail=jail, fresh=True, channels=runner_channels,
                                           syscalls=syscalls, extra_fds=(theirs.fileno(),),
                                           done=done)
        except BaseException as err:  # raised again in the caller's thread
            errors.append(err)
        finally:
            theirs.close()

    thread = threading.Thread(target=costs.carry(serve), name="cml-runner", daemon=True)
    try:
        os.set_inheritable(mine.fileno(), False)
        thread.start()
        checker_env = {**env, "CML_RUNNER_FD": str(mine.fileno())}
        outcome = sandbox.run(checker, cwd=cwd, timeout=timeout, env=checker_env, fresh=True,
                              channels=channels,
                              extra_fds=(mine.fileno(), *(gate.fds if gate else ())),
                              starts=gate.opened if gate else None)
    finally:
        mine.close()
        done.set()
        thread.join()
    if errors:
        raise errors[0]
    return PairOutcome(outcome, result["runner"])
