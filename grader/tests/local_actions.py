"""A workflow's jobs run on this machine as GitHub Actions runs them for one event, for tools
and tests that measure or check a workflow as written (tools/pr_latency.py).

Each job runs in its own folder with a fresh copy of this checkout's files as its workspace
(actions/checkout: the files git tracks, and those it does not ignore, as they are now).
Each `run:` block runs as written, with `bash -e` as GitHub's default shell on Linux, in
that workspace, with the variables GitHub sets (GITHUB_OUTPUT, GITHUB_ENV, RUNNER_TEMP,
GITHUB_API_URL, ...), the workflow's, the job's and the step's `env`, and every `${{ ... }}`
replaced by its value from the contexts GitHub gives (github, env, secrets, steps, needs,
runner, job, inputs, vars). `if:` is decided as GitHub decides it (a condition without a
status function means `success() && (...)`), `needs:` orders the jobs and skips those whose
needs did not succeed, step outputs and job `outputs:` pass values on, `continue-on-error`
and `timeout-minutes` are kept. actions/upload-artifact and actions/download-artifact are
folders copied as the artifact would carry them (a folder's contents, or the one file; no
file or folder whose name starts with a dot unless `include-hidden-files` says so).

What a runner does not do here: no container, no service, no matrix, no other action, no
expression function besides the status functions and a few of GitHub's plain ones. Any of
these raises `Unsupported`: nothing is left out quietly. `permissions:` and `environment:`
decide which token a job gets: here the caller gives the secrets, and the fake API it
points GITHUB_API_URL at decides what each token may do.

The workflow file is read with PyYAML (Debian: python3-yaml) where it is installed, else
with `read_yaml`, a reader of the block-style YAML that workflows are written in.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

try:
    import yaml
except ImportError:  # Debian: python3-yaml
    yaml = None


class Unsupported(Exception):
    """The workflow uses something this runner does not do."""


# --------------------------------------------------------------------------- YAML

_KEY = re.compile(r"""^("[^"]*"|'[^']*'|[^\s"'#:][^:]*?)\s*:(?:\s+(.*))?$""")
_INT = re.compile(r"^[-+]?\d+$")


def _strip_comment(line: str) -> str:
    """The line without its comment (a # at its start or after a space, outside quotes)."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'" and (i == 0 or line[i - 1] in " :[,-"):
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i]
    return line


def _scalar(text: str) -> Any:
    if text.startswith("'") and text.endswith("'") and len(text) > 1:
        return text[1:-1].replace("''", "'")
    if text.startswith('"') and text.endswith('"') and len(text) > 1:
        return json.loads(text)
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].strip()
        return [_scalar(item.strip()) for item in inner.split(",")] if inner else []
    if text == "{}":
        return {}
    if text[:1] in "{&*!|>%@`":
        raise ValueError(f"YAML this reader does not read: {text!r}")
    if text in ("true", "True", "false", "False"):
        return text.lower() == "true"
    if text in ("null", "~"):
        return None
    return int(text) if _INT.match(text) else text


class _Reader:
    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.i = 0

    def peek(self) -> tuple[int, str] | None:
        """(indent, content) of the next line that holds something; None at the end."""
        while self.i < len(self.lines):
            content = _strip_comment(self.lines[self.i]).rstrip()
            if content.strip():
                if "\t" in content[:len(content) - len(content.lstrip())]:
                    raise ValueError(f"line {self.i + 1}: a tab in the indentation")
                return len(content) - len(content.lstrip(" ")), content.strip()
            self.i += 1
        return None

    def node(self, indent: int) -> Any:
        at = self.peek()
        if at is None or at[0] < indent:
            return None
        if at[1] == "-" or at[1].startswith("- "):
            return self.sequence(at[0])
        return self.mapping(at[0])

    def mapping(self, indent: int) -> dict:
        out: dict = {}
        while (at := self.peek()) is not None and at[0] == indent:
            match = _KEY.match(at[1])
            if not match or at[1].startswith("- "):
                raise ValueError(f"line {self.i + 1}: not a `key: value` line: {at[1]!r}")
            self.i += 1
            out[_scalar(match.group(1))] = self.value(match.group(2) or "", indent)
        if at is not None and at[0] > indent:
            raise ValueError(f"line {self.i + 1}: indented more than its mapping")
        return out

    def value(self, rest: str, indent: int) -> Any:
        if rest in ("|", "|-"):
            return self.literal(indent, keep_newline=rest == "|")
        if rest:
            return _scalar(rest)
        at = self.peek()
        if at is not None and (at[0] > indent or (at[0] == indent and at[1].startswith("- "))):
            return self.node(at[0])
        return None

    def sequence(self, indent: int) -> list:
        out: list = []
        while (at := self.peek()) is not None and at[0] == indent and (
                at[1] == "-" or at[1].startswith("- ")):
            item = at[1][1:].lstrip()
            if not item:
                self.i += 1
                out.append(self.value("", indent))
            elif _KEY.match(item) and not item.startswith(("'", '"', "[")):
                # "- key: value": a mapping whose keys stand where this one does
                self.lines[self.i] = " " * (indent + len(at[1]) - len(item)) + item
                out.append(self.mapping(indent + len(at[1]) - len(item)))
            else:
                self.i += 1
                out.append(_scalar(item))
        return out

    def literal(self, indent: int, keep_newline: bool) -> str:
        lines: list[str] = []
        inner: int | None = None
        while self.i < len(self.lines):
            raw = self.lines[self.i].rstrip("\n")
            if raw.strip():
                depth = len(raw) - len(raw.lstrip(" "))
                if depth <= indent or (inner is not None and depth < inner):
                    break
                inner = depth if inner is None else inner
                lines.append(raw[inner:])
            else:
                lines.append("")
            self.i += 1
        while lines and not lines[-1]:
            lines.pop()
        return "\n".join(lines) + ("\n" if keep_newline and lines else "")


def read_yaml(text: str) -> Any:
    """The block-style YAML that workflows are written in: mappings, sequences (`- `),
    literal blocks (`|`, `|-`), flow sequences of scalars (`[a, b]`), `{}`, quoted and plain
    scalars (true/false, null and integers read as such), comments. Anything else raises
    ValueError."""
    reader = _Reader(text)
    doc = reader.node(0)
    if reader.peek() is not None:
        raise ValueError(f"line {reader.i + 1}: not read (indentation?)")
    return doc


def load_workflow(path: Path) -> dict:
    """The workflow file, its `on:` key as "on" (YAML 1.1, PyYAML's, reads it as true)."""
    text = path.read_text(encoding="utf-8")
    doc = yaml.safe_load(text) if yaml is not None else read_yaml(text)
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: not a workflow")
    if True in doc:
        doc["on"] = doc.pop(True)
    return doc


# -------------------------------------------------------------------- expressions

_TOKEN = re.compile(r"""\s*(?:(?P<num>0x[0-9a-fA-F]+|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)
                       |(?P<str>'(?:[^']|'')*')
                       |(?P<op>==|!=|<=|>=|&&|\|\||[<>!().,\[\]*])
                       |(?P<name>[A-Za-z_][A-Za-z0-9_-]*))""", re.VERBOSE)
STATUS_FUNCTIONS = ("success", "failure", "always", "cancelled")


def text_of(value: Any) -> str:
    """A value as `${{ }}` writes it into a string."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (dict, list)):
        return json.dumps(value, indent=2)
    return str(value)


def truthy(value: Any) -> bool:
    if isinstance(value, float) and math.isnan(value):
        return False
    return value not in (None, False, 0, "")


def _number(value: Any) -> float:
    if value is None:
        return 0.0
    if isinstance(value, (bool, int, float)):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            return float(int(text, 16)) if text.lower().startswith("0x") else float(text or 0)
        except ValueError:
            return math.nan
    return math.nan


def _compare(op: str, a: Any, b: Any) -> bool:
    """GitHub's loose comparison: strings ignore case; values of two types compare as
    numbers (null 0, true 1, a string its number or NaN)."""
    if isinstance(a, str) and isinstance(b, str):
        x: Any = a.lower()
        y: Any = b.lower()
    elif isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
        x, y = id(a), id(b)
        if op not in ("==", "!="):
            return False
    else:
        x, y = _number(a), _number(b)
    return {"==": x == y, "!=": x != y, "<": x < y, ">": x > y, "<=": x <= y,
            ">=": x >= y}[op]


def _lookup(value: Any, key: str) -> Any:
    """A property, its name's case ignored, as GitHub's contexts do; null when absent."""
    if not isinstance(value, dict):
        return None
    if key in value:
        return value[key]
    return next((v for k, v in value.items() if str(k).lower() == key.lower()), None)


def _format(fmt: str, *args: Any) -> str:
    return re.sub(r"\{(\d+)\}", lambda m: text_of(args[int(m.group(1))]),
                  fmt.replace("{{", "\0").replace("}}", "\1")).replace(
        "\0", "{").replace("\1", "}")


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "contains": lambda a, b: (any(_compare("==", x, b) for x in a) if isinstance(a, list)
                              else text_of(b).lower() in text_of(a).lower()),
    "startswith": lambda a, b: text_of(a).lower().startswith(text_of(b).lower()),
    "endswith": lambda a, b: text_of(a).lower().endswith(text_of(b).lower()),
    "format": _format,
    "join": lambda a, sep=",": (text_of(sep).join(map(text_of, a)) if isinstance(a, list)
                                else text_of(a)),
    "tojson": lambda a: json.dumps(a, indent=2),
    "fromjson": lambda a: json.loads(text_of(a)),
}


class _Parser:
    """One expression, evaluated as it is parsed (it has no side effects)."""

    def __init__(self, text: str, contexts: dict[str, Any],
                 status: dict[str, bool]) -> None:
        self.text, self.contexts, self.status = text, contexts, status
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        while pos < len(text):
            match = _TOKEN.match(text, pos)
            if not match or match.end() == pos:
                if not text[pos:].strip():
                    break
                raise Unsupported(f"expression {text!r}: cannot read {text[pos:]!r}")
            kind = match.lastgroup or ""
            self.tokens.append((kind, match.group(kind)))
            pos = match.end()
        self.at = 0

    def _take(self, *ops: str) -> str | None:
        if self.at < len(self.tokens) and self.tokens[self.at][0] == "op" and (
                self.tokens[self.at][1] in ops):
            self.at += 1
            return self.tokens[self.at - 1][1]
        return None

    def _expect(self, op: str) -> None:
        if self._take(op) is None:
            raise Unsupported(f"expression {self.text!r}: {op!r} expected")

    def parse(self) -> Any:
        value = self._or()
        if self.at != len(self.tokens):
            raise Unsupported(f"expression {self.text!r}: {self.tokens[self.at][1]!r} "
                              "not expected")
        return value

    def _or(self) -> Any:
        value = self._and()
        while self._take("||"):
            right = self._and()
            value = value if truthy(value) else right
        return value

    def _and(self) -> Any:
        value = self._compare()
        while self._take("&&"):
            right = self._compare()
            value = right if truthy(value) else value
        return value

    def _compare(self) -> Any:
        value = self._unary()
        while (op := self._take("==", "!=", "<", ">", "<=", ">=")) is not None:
            value = _compare(op, value, self._unary())
        return value

    def _unary(self) -> Any:
        if self._take("!"):
            return not truthy(self._unary())
        return self._primary()

    def _primary(self) -> Any:
        if self._take("("):
            value = self._or()
            self._expect(")")
            return value
        if self.at >= len(self.tokens):
            raise Unsupported(f"expression {self.text!r} ends too soon")
        kind, token = self.tokens[self.at]
        self.at += 1
        if kind == "num":
            return _number(token)
        if kind == "str":
            return token[1:-1].replace("''", "'")
        if kind != "name":
            raise Unsupported(f"expression {self.text!r}: {token!r} not expected")
        if token in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[token]
        if self._take("("):
            return self._call(token)
        value = _lookup(self.contexts, token)
        if value is None and token.lower() not in self.contexts:
            raise Unsupported(f"expression {self.text!r}: no context {token!r} here")
        while True:
            if self._take("."):
                if self._take("*"):
                    raise Unsupported(f"expression {self.text!r}: `.*` filters")
                kind, name = self.tokens[self.at] if self.at < len(self.tokens) else ("", "")
                if kind != "name":
                    raise Unsupported(f"expression {self.text!r}: a name after '.'")
                self.at += 1
                value = _lookup(value, name)
            elif self._take("["):
                index = self._or()
                self._expect("]")
                value = (value[int(index)] if isinstance(value, list)
                         and 0 <= _number(index) < len(value) else _lookup(value, text_of(index)))
            else:
                return value

    def _call(self, name: str) -> Any:
        args: list[Any] = []
        if not self._take(")"):
            args.append(self._or())
            while self._take(","):
                args.append(self._or())
            self._expect(")")
        if name.lower() in STATUS_FUNCTIONS:
            return self.status[name.lower()]
        if name.lower() not in FUNCTIONS:
            raise Unsupported(f"expression {self.text!r}: the function {name}() is not "
                              "simulated")
        return FUNCTIONS[name.lower()](*args)


def evaluate(expression: str, contexts: dict[str, Any],
             status: dict[str, bool] | None = None) -> Any:
    """The value of one expression (the text inside `${{ }}`)."""
    return _Parser(expression, contexts, status or {}).parse()


_SUBST = re.compile(r"\$\{\{(.*?)\}\}", re.DOTALL)


def substitute(text: str, contexts: dict[str, Any]) -> str:
    """`text` with each `${{ expression }}` replaced by its value."""
    return _SUBST.sub(lambda m: text_of(evaluate(m.group(1), contexts)), text)


def condition(text: Any, contexts: dict[str, Any], status: dict[str, bool]) -> bool:
    """An `if:` as GitHub decides it: `${{ }}` optional; without a status function the
    condition is `success() && (...)`."""
    if text is None:
        return status["success"]
    if isinstance(text, bool):
        return text and status["success"]
    expression = str(text).strip()
    match = _SUBST.fullmatch(expression)
    if match:
        expression = match.group(1).strip()
    if not re.search(r"\b(?:%s)\s*\(" % "|".join(STATUS_FUNCTIONS), expression, re.I):
        expression = f"success() && ({expression})"
    return truthy(evaluate(expression, contexts, status))


# -------------------------------------------------------------------------- the clock

def _cron_field(text: str, low: int, high: int) -> set[int]:
    """The values one cron field names (`*`, `N`, `A-B`, `*/S`, `N/S`, `A-B/S`, lists)."""
    values: set[int] = set()
    for part in text.split(","):
        span, _, step = part.partition("/")
        if span == "*":
            first, last = low, high
        elif "-" in span:
            first, last = (int(x) for x in span.split("-", 1))
        else:
            first = last = int(span)
            if step:
                last = high
        values.update(range(first, last + 1, int(step or 1)))
    return values


def schedule_wait(doc: dict, before: str = "a run") -> str:
    """What the workflow's `schedule:` adds between a push and `before` (its start), read
    from its cron lines (GitHub's: minute hour day month weekday, UTC): the longest gap
    between two runs, and the mean wait of a push at a random minute."""
    on = doc.get("on") or {}
    on = {on: None} if isinstance(on, str) else {k: None for k in on} if isinstance(
        on, list) else on
    crons = [str(s.get("cron", "")) for s in (on.get("schedule") or [])]
    by_hand = "; none when started by hand" if "workflow_dispatch" in on else ""
    if not crons:
        return "no schedule" + (": started by hand only" if by_hand else "")
    minutes: set[int] = set()
    days = ""
    for cron in crons:
        fields = cron.split()
        if len(fields) != 5:
            raise ValueError(f"cron {cron!r}: not five fields")
        minutes.update(h * 60 + m for h in _cron_field(fields[1], 0, 23)
                       for m in _cron_field(fields[0], 0, 59))
        if fields[2:] != ["*", "*", "*"]:
            days = ", on the days it names"
    ordered = sorted(minutes)
    gaps = [b - a for a, b in zip(ordered, ordered[1:] + [ordered[0] + 1440])]
    mean = sum(g * g for g in gaps) / (2 * 1440)
    return (f"cron {', '.join(repr(c) for c in crons)}: up to {max(gaps)} min wait before "
            f"{before} ({mean:.0f} on average){days}, plus GitHub's own delay in starting "
            f"scheduled runs (longer at busy times){by_hand}")


# --------------------------------------------------------------------------- runs

@dataclass
class StepRun:
    name: str
    outcome: str  # success, failure or skipped (before continue-on-error)
    conclusion: str  # after continue-on-error
    seconds: float = 0.0
    status: int | None = None  # a run block's exit status
    log: Path | None = None
    note: str = ""


@dataclass
class JobRun:
    name: str
    result: str  # success, failure or skipped
    seconds: float = 0.0
    steps: list[StepRun] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)
    folder: Path | None = None


def read_command_file(path: Path) -> dict[str, str]:
    """GITHUB_OUTPUT's and GITHUB_ENV's lines: NAME=VALUE, or NAME<<DELIMITER ... DELIMITER."""
    out: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            value: list[str] = []
            while i < len(lines) and lines[i] != delimiter:
                value.append(lines[i])
                i += 1
            i += 1
            out[name] = "\n".join(value)
        elif "=" in line:
            name, rest = line.split("=", 1)
            out[name] = rest
    return out


def checkout_files(root: Path, dest: Path) -> None:
    """What actions/checkout gives: the files of `root`'s work tree that git tracks, and
    those it does not ignore, as they are now (the work not yet committed included); where
    `root` is no git work tree, every file but those .gitignore's patterns name."""
    dest.mkdir(parents=True, exist_ok=True)
    try:
        listing = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached",
                                  "--others", "--exclude-standard"], capture_output=True,
                                 check=True).stdout.decode()
    except (OSError, subprocess.CalledProcessError):
        ignore = root / ".gitignore"
        patterns = [line.strip().strip("/") for line in (
            ignore.read_text().splitlines() if ignore.is_file() else [])
            if line.strip() and not line.startswith(("#", "!"))]
        shutil.copytree(root, dest, ignore=shutil.ignore_patterns(".git", *patterns),
                        symlinks=True, dirs_exist_ok=True)
        return
    for rel in filter(None, listing.split("\0")):
        source = root / rel
        if source.is_symlink() or source.is_file():
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target, follow_symlinks=False)


def _artifact_copy(source: Path, dest: Path, hidden: bool) -> None:
    """A folder's contents, or the one file, into `dest` (an artifact's root); files and
    folders whose name starts with a dot only with `hidden` (upload-artifact's
    include-hidden-files)."""
    dest.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(source, dest, dirs_exist_ok=True, symlinks=True,
                        ignore=None if hidden else shutil.ignore_patterns(".*"))
    elif hidden or not source.name.startswith("."):
        shutil.copy2(source, dest / source.name)


class Workflow:
    """One run of a workflow's jobs on this machine (the module's text says how)."""

    def __init__(self, doc: dict, checkout: Path, work: Path, event_name: str,
                 event: dict, secrets: dict[str, str], github: dict[str, str],
                 base_env: dict[str, str] | None = None,
                 say: Callable[[str], None] = print) -> None:
        """`checkout`: the repository actions/checkout copies; `work`: a folder for the
        jobs' workspaces, temporary folders, logs and artifacts; `github`: the github
        context's values besides those made here (repository, api_url, sha, ...);
        `base_env`: the runner's own environment (default: this process's, less any
        GITHUB_ and RUNNER_ variables)."""
        self.doc, self.checkout, self.work = doc, checkout, work
        self.event_name, self.event, self.secrets = event_name, event, secrets
        self.say = say
        self.github = {"event_name": event_name, "event": event, "ref": "refs/heads/main",
                       "ref_name": "main", "run_id": "1", "run_number": "1",
                       "run_attempt": "1", "actor": "course-staff",
                       "workflow": str(doc.get("name", "")),
                       "server_url": "https://github.com", **github}
        self.github.setdefault("repository_owner", self.github.get("repository", "/")
                               .split("/")[0])
        env = dict(os.environ) if base_env is None else dict(base_env)
        self.base_env = {k: v for k, v in env.items()
                         if not k.startswith(("GITHUB_", "RUNNER_"))}
        self.artifacts = work / "artifacts"
        self.results: dict[str, JobRun] = {}
        for key in ("defaults", "services", "container"):
            if key in doc:
                raise Unsupported(f"the workflow's `{key}:`")

    def jobs(self) -> dict[str, dict]:
        return dict(self.doc.get("jobs") or {})

    def order(self) -> list[str]:
        """The jobs in an order that runs each after its needs (the file's order else)."""
        jobs, done = self.jobs(), []
        while len(done) < len(jobs):
            ready = [name for name, job in jobs.items() if name not in done
                     and all(n in done for n in self.needs(job))]
            if not ready:
                raise ValueError("the jobs' needs make a cycle")
            done.append(ready[0])
        return done

    @staticmethod
    def needs(job: dict) -> list[str]:
        needs = job.get("needs") or []
        return [needs] if isinstance(needs, str) else list(needs)

    def run(self, edit: Callable[[str, str], str] | None = None) -> dict[str, JobRun]:
        """Every job, in order; `edit(job, run_block)` may change a run block before it
        runs (the caller says so where it reports)."""
        for name in self.order():
            self.results[name] = self.run_job(name, edit=edit)
        return self.results

    def run_job(self, name: str, folder: Path | None = None,
                edit: Callable[[str, str], str] | None = None) -> JobRun:
        """One job, its needs' results taken from earlier runs (`results`)."""
        job = self.jobs()[name]
        for key in ("strategy", "container", "services", "uses", "defaults"):
            if key in job:
                raise Unsupported(f"job {name}: `{key}:`")
        needs = {n: {"result": self.results[n].result, "outputs": self.results[n].outputs}
                 for n in self.needs(job)}
        ok = all(n["result"] == "success" for n in needs.values())
        job_status = {"success": ok, "failure": any(n["result"] == "failure"
                                                    for n in needs.values()),
                      "always": True, "cancelled": False}
        contexts = {"github": self.github, "needs": needs, "vars": {},
                    "inputs": self.inputs()}
        if not condition(job.get("if"), contexts, job_status):
            self.say(f"{name}: skipped (`if:` or needs)")
            return JobRun(name, "skipped")
        folder = folder or self.work / "jobs" / name
        if folder.exists():
            shutil.rmtree(folder)
        workspace, temp = folder / "workspace", folder / "temp"
        for path in (workspace, temp, folder / "logs", folder / "files"):
            path.mkdir(parents=True)
        runner = {"os": "Linux", "arch": "X64", "name": f"local-{name}", "temp": str(temp),
                  "tool_cache": str(folder / "tool-cache"), "debug": ""}
        github = {**self.github, "job": name, "workspace": str(workspace)}
        env: dict[str, str] = {}
        run = JobRun(name, "success", folder=folder)
        start = time.monotonic()
        limit = float(job.get("timeout-minutes", 360)) * 60
        contexts = {"github": github, "needs": needs, "vars": {}, "inputs": self.inputs(),
                    "secrets": self.secrets, "runner": runner, "job": {"status": "success"},
                    "steps": {}, "env": env, "matrix": {}, "strategy": {}}
        for level in (self.doc.get("env") or {}, job.get("env") or {}):
            env.update({k: substitute(text_of(v), contexts) for k, v in level.items()})
        extra_path: list[str] = []
        failed = False
        for number, step in enumerate(job.get("steps") or [], 1):
            label = str(step.get("name") or step.get("uses") or step.get("run", "")
                        .split("\n")[0])
            status = {"success": not failed, "failure": failed, "always": True,
                      "cancelled": False}
            contexts["job"] = {"status": "failure" if failed else "success"}
            if not condition(step.get("if"), contexts, status):
                run.steps.append(StepRun(label, "skipped", "skipped"))
                self.record(contexts, step, "skipped", "skipped", {})
                continue
            step_env = {**env, **{k: substitute(text_of(v), {**contexts, "env": env})
                                  for k, v in (step.get("env") or {}).items()}}
            files = folder / "files" / str(number)
            files.mkdir()
            variables = self.variables(github, runner, step_env, files, name, step)
            if extra_path:
                variables["PATH"] = ":".join(extra_path + [variables.get("PATH", "")])
            began = time.monotonic()
            log = folder / "logs" / f"{number:02d}.log"
            left = limit - (began - start)
            if "timeout-minutes" in step:
                left = min(left, float(step["timeout-minutes"]) * 60)
            code, note = self.step(name, step, contexts, {**contexts, "env": step_env},
                                   variables, workspace, log, left, edit)
            outcome = "success" if code == 0 else "failure"
            continue_on_error = truthy(step.get("continue-on-error", False))
            conclusion = "success" if continue_on_error else outcome
            run.steps.append(StepRun(label, outcome, conclusion, time.monotonic() - began,
                                     code, log if log.is_file() else None, note))
            self.say(f"{name}: {label}: {outcome}" + (f" ({note})" if note else "")
                     + (", continue-on-error" if conclusion != outcome else "")
                     + f", {time.monotonic() - began:.1f} s")
            self.record(contexts, step, outcome, conclusion,
                        read_command_file(files / "output"))
            env.update(read_command_file(files / "env"))
            if (files / "path").is_file():
                extra_path = [p for p in (files / "path").read_text().splitlines()
                              if p] + extra_path
            failed = failed or conclusion == "failure"
        run.result = "failure" if failed else "success"
        contexts["job"] = {"status": run.result}
        run.outputs = {k: substitute(text_of(v), contexts)
                       for k, v in (job.get("outputs") or {}).items()}
        run.seconds = time.monotonic() - start
        return run

    def inputs(self) -> dict[str, Any]:
        on = self.doc.get("on") or {}
        dispatch = (on.get("workflow_dispatch") if isinstance(on, dict) else None) or {}
        given = self.event.get("inputs") or {}
        return {k: given.get(k, (spec or {}).get("default"))
                for k, spec in (dispatch.get("inputs") or {}).items()}

    def labels(self, job: str) -> list:
        runs_on = self.jobs()[job].get("runs-on", [])
        return [runs_on] if isinstance(runs_on, str) else list(runs_on)

    @staticmethod
    def record(contexts: dict, step: dict, outcome: str, conclusion: str,
               outputs: dict[str, str]) -> None:
        if step.get("id"):
            contexts["steps"][str(step["id"])] = {"outcome": outcome, "conclusion": conclusion,
                                                  "outputs": outputs}

    def variables(self, github: dict, runner: dict, env: dict[str, str], files: Path,
                  job: str, step: dict) -> dict[str, str]:
        """The process environment of one step, as a runner sets it."""
        out = dict(self.base_env)
        out.update({
            "CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_JOB": job,
            "GITHUB_ACTION": str(step.get("id") or "__run"),
            "GITHUB_WORKFLOW": str(github["workflow"]),
            "GITHUB_EVENT_NAME": self.event_name, "GITHUB_EVENT_PATH": str(files / "event.json"),
            "GITHUB_WORKSPACE": str(github["workspace"]), "GITHUB_OUTPUT": str(files / "output"),
            "GITHUB_ENV": str(files / "env"), "GITHUB_PATH": str(files / "path"),
            "GITHUB_STEP_SUMMARY": str(files / "summary.md"),
            "RUNNER_TEMP": runner["temp"], "RUNNER_OS": runner["os"],
            "RUNNER_ARCH": runner["arch"], "RUNNER_NAME": runner["name"],
            "RUNNER_TOOL_CACHE": runner["tool_cache"]})
        hosted = "self-hosted" not in [str(x) for x in self.labels(job)]
        out["RUNNER_ENVIRONMENT"] = "github-hosted" if hosted else "self-hosted"
        for key in ("repository", "repository_owner", "ref", "ref_name", "sha", "run_id",
                    "run_number", "run_attempt", "actor", "server_url", "api_url",
                    "graphql_url", "workflow_ref"):
            if github.get(key):
                out[f"GITHUB_{key.upper()}"] = str(github[key])
        (files / "event.json").write_text(json.dumps(self.event, indent=2) + "\n")
        out.update(env)
        return out

    def step(self, job: str, step: dict, contexts: dict, step_contexts: dict,
             variables: dict[str, str], workspace: Path, log: Path, left: float,
             edit: Callable[[str, str], str] | None) -> tuple[int, str]:
        """(exit status, a note) of one step."""
        if "run" in step:
            script = substitute(str(step["run"]), step_contexts)
            if edit is not None:
                script = edit(job, script)
            shell = step.get("shell", "")
            if shell not in ("", "bash", "sh"):
                raise Unsupported(f"job {job}: `shell: {shell}`")
            argv = {"": ["bash", "-e"], "bash": ["bash", "--noprofile", "--norc", "-eo",
                                                "pipefail"], "sh": ["sh", "-e"]}[shell]
            path = log.with_suffix(".sh")
            path.write_text(script)
            cwd = workspace / substitute(str(step.get("working-directory", ".")),
                                         step_contexts)
            with log.open("w") as out:
                try:
                    proc = subprocess.run([*argv, str(path)], cwd=cwd, env=variables,
                                          stdout=out, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, timeout=max(left, 1))
                except subprocess.TimeoutExpired:
                    return 1, "timed out (timeout-minutes)"
            return proc.returncode, "" if proc.returncode == 0 else (
                f"exit status {proc.returncode}")
        uses = str(step.get("uses", ""))
        action = uses.split("@")[0]
        given = {k: substitute(text_of(v), step_contexts)
                 for k, v in (step.get("with") or {}).items()}
        known = {"actions/checkout": ("persist-credentials", "fetch-depth"),
                 "actions/upload-artifact": ("name", "path", "if-no-files-found",
                                             "retention-days", "compression-level",
                                             "include-hidden-files"),
                 "actions/download-artifact": ("name", "path")}
        if action not in known:
            raise Unsupported(f"job {job}: the action {uses or step!r}")
        for key in given:
            if key not in known[action]:
                raise Unsupported(f"job {job}: {action} with `{key}`")
        if action == "actions/checkout":
            checkout_files(self.checkout, workspace)
            return 0, ""
        if action == "actions/upload-artifact":
            source = workspace / given.get("path", "")
            store = self.artifacts / given.get("name", "artifact")
            if not source.exists():
                missing = given.get("if-no-files-found", "warn")
                return (1 if missing == "error" else 0), f"no files at {given.get('path')}"
            if store.exists():
                return 1, f"an artifact named {given.get('name')} exists already"
            _artifact_copy(source, store, given.get("include-hidden-files") == "true")
            return 0, ""
        store = self.artifacts / given.get("name", "")
        if "name" not in given or not store.is_dir():
            return 1, f"no artifact named {given.get('name')}"
        shutil.copytree(store, workspace / given.get("path", "."), dirs_exist_ok=True,
                        symlinks=True)
        return 0, ""
