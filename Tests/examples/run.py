#!/usr/bin/env python3
"""Runs the examples of the documentation against real kvods, so that they stay true (docs/EXAMPLES.md).

What it runs:
  - every fenced block of the Markdown files below whose info string is tagged `run` (```sh run, ```python run,
    ```js run, ```jsonl run), each against a fresh kvod on the default model;
  - the EXAMPLES of `kvoctl --help`, of every `kvoctl help SUBCOMMAND` and of `kvod --help`, each group against a
    fresh kvod.
Every other fenced block must say what it is (`model`, `output`, `excerpt`, `diagram`, `usage`, `needs ...`,
`tested-by PATH`): an
untagged block fails the run, so a new example cannot be left out by accident.

usage: Tests/examples/run.py [--list] [--only TEXT]
  --list        print what would run, and what would not and why, then exit
  --only TEXT   run only the examples whose name contains TEXT
environment: KVOD_BIN, KVOCTL_BIN (default .build/debug/kvod, .build/debug/kvoctl).
Exit status 0 when every example ran as documented, 1 otherwise. Standard library only.
"""

import json
import os
import pathlib
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
DOCUMENTS = ["README.md", "docs/*.md", "Protocol/*.md", "clients/python/README.md", "clients/typescript/README.md",
             "docker/README.md", "Benchmarks/README.md"]
NOT_RUN_TAGS = ("output", "excerpt", "diagram", "usage", "needs", "tested-by")
# The ports the documentation writes; in a run block each becomes a free port (the same one throughout the block).
DOCUMENTED_PORTS = ("7070", "7071", "7072", "7171", "8080", "9464")
COMMAND_SECONDS = 30  # the longest a foreground command, a program or a transcript line may take
START_SECONDS = 20    # the longest a kvod may take to print its listening line

KVOD = pathlib.Path(os.environ.get("KVOD_BIN", REPO / ".build/debug/kvod")).resolve()
KVOCTL = pathlib.Path(os.environ.get("KVOCTL_BIN", REPO / ".build/debug/kvoctl")).resolve()


# MARK: - extraction

class Example:
    """One block to run: `kind` is sh, python, js, jsonl or model; `text` its code; `name` where it comes from."""

    def __init__(self, name, kind, text, tag=""):
        self.name, self.kind, self.text, self.tag = name, kind, text, tag


def fenced_blocks(path):
    """Yields (line number, info string, text) for every fenced block of a Markdown file."""
    lines = path.read_text().split("\n")
    index = 0
    while index < len(lines):
        opening = re.match(r"^(\s*)```(.*)$", lines[index])
        if not opening:
            index += 1
            continue
        indent, info = len(opening.group(1)), opening.group(2).strip()
        end = index + 1
        while end < len(lines) and not re.match(r"^\s*```\s*$", lines[end]):
            end += 1
        body = "\n".join(line[indent:] if line[:indent].isspace() else line for line in lines[index + 1:end])
        yield index + 1, info, body + "\n"
        index = end + 1


def document_examples(problems):
    """The run blocks of the documents, plus (name, reason) for each block not run; untagged blocks are problems."""
    examples, skipped = [], []
    paths = sorted({path for pattern in DOCUMENTS for path in REPO.glob(pattern)})
    for path in paths:
        relative = path.relative_to(REPO)
        for line, info, text in fenced_blocks(path):
            name = f"{relative}:{line}"
            words = info.split()
            language, tag = (words[0], words[1:]) if words else ("", [])
            if not tag:
                problems.append(f"{name}: the block is not tagged (```{language or 'text'} run, or model, output, "
                                "excerpt, diagram, usage, needs ..., tested-by PATH: docs/EXAMPLES.md)")
            elif tag[0] == "run":
                kind = {"sh": "sh", "python": "python", "js": "js", "jsonl": "jsonl"}.get(language)
                if kind is None:
                    problems.append(f"{name}: cannot run a ```{language} block")
                else:
                    examples.append(Example(name, kind, text, " ".join(tag[1:])))
            elif tag[0] == "model":
                examples.append(Example(name, "model", text))
            elif tag[0] == "tested-by":
                test = REPO / " ".join(tag[1:])
                if not test.is_file():
                    problems.append(f"{name}: tested-by names {test.relative_to(REPO)}, which does not exist")
                elif squeeze(text) not in squeeze(test.read_text()):
                    problems.append(f"{name}: the block is not in {test.relative_to(REPO)} as written")
                skipped.append((name, " ".join(tag)))
            elif tag[0] in NOT_RUN_TAGS:
                if tag[0] == "needs" and len(tag) == 1:
                    problems.append(f"{name}: `needs` must say what the example needs")
                skipped.append((name, " ".join(tag)))
            else:
                problems.append(f"{name}: unknown tag {tag[0]!r} (docs/EXAMPLES.md)")
    return examples, skipped


def squeeze(text):
    """Text without its indentation and blank lines, to find a block inside a test that indents it."""
    return "\n".join(line.strip() for line in text.split("\n") if line.strip())


def help_examples(binary, arguments):
    """The EXAMPLE(S) and SHELL COMPLETION sections of a help text, as one sh block (lines indented by two spaces)."""
    environment = dict(os.environ, COLUMNS="1000")
    text = subprocess.run([str(binary), *arguments], capture_output=True, text=True, env=environment,
                          timeout=COMMAND_SECONDS).stdout
    sections = re.findall(r"^(?:EXAMPLES?|SHELL COMPLETION)[^\n]*:\n((?:  .*\n)+)", text, re.M)
    return "".join(line[2:] + "\n" for section in sections for line in section.splitlines()) or None


def cli_examples():
    """The examples of kvod --help, kvoctl --help and every kvoctl subcommand's help."""
    examples = []
    listing = subprocess.run([str(KVOCTL), "--help"], capture_output=True, text=True, timeout=COMMAND_SECONDS,
                             env=dict(os.environ, COLUMNS="1000")).stdout
    block = listing.split("SUBCOMMANDS:\n", 1)[1].split("\n\n", 1)[0]
    subcommands = re.findall(r"^  (\S+)  ", block, re.M)
    for name, binary, arguments in ([("kvod --help", KVOD, ["--help"]), ("kvoctl --help", KVOCTL, ["--help"])]
                                    + [(f"kvoctl help {sub}", KVOCTL, ["help", sub]) for sub in subcommands]):
        text = help_examples(binary, arguments)
        if text:
            examples.append(Example(name, "sh", text))
    return examples


# MARK: - kvod

def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Kvod:
    """A kvod on 127.0.0.1 and a free port, started by the constructor; `stop()` ends it with SIGTERM."""

    def __init__(self, arguments=(), cwd=None):
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen([str(KVOD), "--port", "0", *arguments], stdout=subprocess.PIPE,
                                        stderr=self.log, stdin=subprocess.DEVNULL, cwd=cwd, text=True)
        self.port = wait_for_listening(self.process, self.log)

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()

    def subscriptions(self):
        """kvod's current number of subscriptions (`stats`), or None if it does not answer."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=5) as connection:
                connection.sendall(b'{"jsonrpc":"2.0","id":1,"method":"stats"}\n')
                line = connection.makefile("rb").readline()
            return json.loads(line)["result"]["subscriptions"]
        except (OSError, ValueError, KeyError):
            return None


def wait_for_listening(process, log):
    """Reads kvod's stdout until its `kvod listening on HOST:PORT` line; returns the port or raises with its log."""
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        match = re.search(r"kvod listening on \S+:(\d+)", line or "")
        if match:
            return int(match.group(1))
        if not line and process.poll() is not None:
            break
    process.kill()
    process.wait()
    log.seek(0)
    raise RuntimeError(f"kvod did not start: {log.read().decode(errors='replace')[-2000:]}")


# MARK: - running

class Failure(Exception):
    pass


def with_free_ports(text, ports):
    """`text` with every documented port replaced by its free port, picked at the first use."""
    def replace(match):
        return str(ports.setdefault(match.group(0), free_port()))
    return re.sub(r"(?<![\d.])(" + "|".join(DOCUMENTED_PORTS) + r")(?![\d])", replace, text)


def shell_commands(text):
    """The commands of a shell block: lines joined across trailing backslashes and open quotes; no blank lines."""
    commands, pending = [], ""
    for line in text.split("\n"):
        pending = f"{pending}\n{line}" if pending else line
        if pending.endswith("\\"):
            continue
        try:
            shlex.split(pending, comments=True)
        except ValueError:  # a quote still open: the command goes on
            continue
        if pending.strip():
            commands.append(pending.strip())
        pending = ""
    if pending.strip():
        commands.append(pending.strip())
    return commands


def trailing_comment(command):
    """The comment after the last line's command (from an unquoted `#` that starts a word to the end), or ''."""
    line = command.split("\n")[-1]
    quote = None
    for index, character in enumerate(line):
        if quote:
            if character == quote:
                quote = None
        elif character in "'\"":
            quote = character
        elif character == "#" and (index == 0 or line[index - 1].isspace()):
            return line[index + 1:].strip()
    return ""


def is_background(command):
    """Commands that run until stopped: a kvod serving, kvoctl watch without --count, make run."""
    words = shlex.split(command, comments=True)
    words = [word for word in words if not re.match(r"^[A-Z_]+=", word)]  # environment assignments
    if not words:
        return False
    program = os.path.basename(words[0])
    if program == "kvod":
        return not ({"--help", "-h", "--version", "--print-config", "--dump-snapshot"} & set(words))
    if program == "kvoctl" and "watch" in words:
        return "--count" not in words
    return words[:2] == ["make", "run"]


def run_shell_block(example, workdir):
    """Runs each command of an sh block in bash, in order, against a fresh kvod (KVOD_PORT)."""
    ports = {}
    server = Kvod()
    ports["7070"] = server.port
    environment = dict(os.environ, KVOD_PORT=str(server.port), PATH=f"{workdir / 'bin'}:{os.environ['PATH']}",
                       NO_COLOR="1", HOME=str(workdir))
    environment.pop("KVOD_HOST", None)
    environment.pop("KVOD_TOKEN", None)
    background = []
    try:
        for command in shell_commands(example.text):
            comment = trailing_comment(command)
            if comment.startswith("needs "):
                continue
            expected_status = int(re.search(r"\(exit (\d+)\)", comment).group(1)) if "(exit " in comment else 0
            command = with_free_ports(command, ports)
            if is_background(command):
                background.append(start_background(command, environment, workdir, server))
                continue
            result = subprocess.run(["bash", "-c", command], cwd=workdir, env=environment, capture_output=True,
                                    text=True, timeout=COMMAND_SECONDS, stdin=subprocess.DEVNULL)
            if result.returncode != expected_status:
                raise Failure(f"`{command}` exited {result.returncode}, not {expected_status}:\n"
                              f"{result.stdout[-1500:]}{result.stderr[-1500:]}")
            printed = re.match(r"prints (.*)$", comment)
            if printed and result.stdout.strip() != printed.group(1).strip():
                raise Failure(f"`{command}` printed {result.stdout.strip()!r}, the comment says {printed.group(1)!r}")
        for command, process, log in background:
            status = process.poll()
            log.seek(0)
            errors = log.read().decode(errors="replace")
            if status not in (None, 0):
                raise Failure(f"`{command}` (running in the background) exited {status}:\n{errors[-1500:]}")
            if "kvoctl" in command and errors.strip():
                raise Failure(f"`{command}` (running in the background) wrote to stderr:\n{errors[-1500:]}")
    finally:
        for _, process, log in background:
            stop_process(process)
            log.close()
        server.stop()


def start_background(command, environment, workdir, server):
    """Starts a command that runs until stopped, and waits until it is in effect: a watch subscribed, a kvod
    answering (a kvod given no --port gets a free port of its own through KVOD_PORT)."""
    log = tempfile.TemporaryFile()
    is_watch = "kvoctl" in command
    environment = dict(environment)
    ports = [int(port) for port in re.findall(r"--port[ =](\d+)", command)]
    if not is_watch and not ports:
        environment["KVOD_PORT"] = str(free_port())
        ports = [int(environment["KVOD_PORT"])]
    before = server.subscriptions()
    process = subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=workdir, env=environment,
                               stdout=subprocess.DEVNULL, stderr=log, stdin=subprocess.DEVNULL,
                               start_new_session=True)
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline and process.poll() is None:
        if is_watch:
            count = server.subscriptions()
            if count is not None and before is not None and count > before:
                break
        else:
            try:
                socket.create_connection(("127.0.0.1", ports[0]), timeout=1).close()
                break
            except OSError:
                pass
        time.sleep(0.05)
    else:
        if process.poll() is None:
            raise Failure(f"`{command}` was not in effect after {START_SECONDS} s")
    return command, process, log


def stop_process(process):
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def run_program(example, workdir):
    """Runs a python or js block as a program against a fresh kvod (its documented address made the kvod's)."""
    server = Kvod()
    try:
        code = with_free_ports(example.text, {"7070": server.port})
        if example.kind == "python":
            file = workdir / "example.py"
            command = [sys.executable, str(file)]
            environment = dict(os.environ, PYTHONPATH=str(REPO / "clients/python"))
        else:
            file = workdir / "example.mjs"
            command = ["node", "--experimental-websocket", str(file)]
            environment = dict(os.environ)
        file.write_text(code)
        result = subprocess.run(command, cwd=workdir, env=environment, capture_output=True, text=True,
                                timeout=COMMAND_SECONDS, stdin=subprocess.DEVNULL)
        if result.returncode != 0:
            raise Failure(f"exited {result.returncode}:\n{result.stdout[-1500:]}{result.stderr[-2500:]}")
    finally:
        server.stop()


def run_transcript(example, workdir):
    """Replays a jsonl block: lines marked → (or, unmarked, requests: with "method" and "id") are sent in order, and
    the lines kvod sends in between must equal the others (as JSON). Responses the block does not show are read at
    the end and must not be errors."""
    server = Kvod()
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=COMMAND_SECONDS) as connection, \
                connection.makefile("rb") as reader:
            owed = 0
            for line in example.text.split("\n"):
                line = line.strip()
                if not line or line.startswith("$ "):
                    continue
                direction, _, body = line.partition(" ") if line[0] in "→←" else ("", "", line)
                message = json.loads(with_free_ports(body, {"7070": server.port}))
                if direction == "→" or (not direction and "method" in message and "id" in message):
                    connection.sendall(json.dumps(message).encode() + b"\n")
                    owed += 1
                    continue
                received = reader.readline()
                if not received:
                    raise Failure(f"kvod closed the connection; expected {body}")
                if json.loads(received) != message:
                    raise Failure(f"kvod sent {received.decode().strip()}\n  the block says {body}")
                if "id" in message:
                    owed -= 1
            while owed > 0:
                received = reader.readline()
                if not received:
                    raise Failure("kvod closed the connection before answering every request")
                answer = json.loads(received)
                if "error" in answer:
                    raise Failure(f"kvod answered {received.decode().strip()}")
                if "id" in answer:
                    owed -= 1
    finally:
        server.stop()


def run_model(example, workdir):
    """Serves a model block with kvod --model and checks that kvod answers."""
    file = workdir / "model.json"
    file.write_text(example.text)
    server = Kvod(["--model", str(file)])
    try:
        if server.subscriptions() is None:
            raise Failure("kvod --model did not answer stats")
    finally:
        server.stop()


RUNNERS = {"sh": run_shell_block, "python": run_program, "js": run_program, "jsonl": run_transcript,
           "model": run_model}


def prepare_workdir(root):
    """A folder to run examples in: bin/ with kvod, kvoctl and node_modules/kvod for `import "kvod"`, and .build/debug
    and .build/release pointing at bin/ (the README names the binaries by those paths)."""
    (root / "bin").mkdir()
    for binary in (KVOD, KVOCTL):
        (root / "bin" / binary.name).symlink_to(binary)
    for configuration in ("debug", "release"):
        (root / ".build").mkdir(exist_ok=True)
        (root / ".build" / configuration).symlink_to(root / "bin")
    (root / "node_modules").mkdir()
    (root / "node_modules" / "kvod").symlink_to(REPO / "clients/typescript")


def self_test():
    """The runner must catch what it is for: each of these examples is wrong, and must fail."""
    wrong = [
        Example("self-test: an undeclared key", "sh", "kvoctl set person.name Alice\n"),
        Example("self-test: a wrong `prints`", "sh", "kvoctl get person.firstName   # prints \"Ada\"\n"),
        Example("self-test: a wrong exit status", "sh", "kvoctl get person   # (exit 2)\n"),
        Example("self-test: a watch that fails", "sh", "kvoctl watch person.name --new\n"),
        Example("self-test: a wrong response", "jsonl", '{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
                '{"jsonrpc":"2.0","id":1,"result":"ping"}\n'),
        Example("self-test: an error not shown", "jsonl", '{"jsonrpc":"2.0","id":1,"method":"get",'
                '"params":{"path":"person.name"}}\n'),
        Example("self-test: a failing program", "python", "import kvod\nkvod.Client('127.0.0.1:7070').get('person.name')\n"),
        Example("self-test: a model that does not load", "model", '{"root": "Nowhere", "classes": {}}\n'),
    ]
    caught = 0
    for example in wrong:
        with tempfile.TemporaryDirectory(prefix="kvod-examples-") as directory:
            prepare_workdir(pathlib.Path(directory))
            try:
                RUNNERS[example.kind](example, pathlib.Path(directory))
                print(f"FAIL  {example.name}: ran without an error")
            except (Failure, RuntimeError, subprocess.TimeoutExpired, OSError, ValueError):
                caught += 1
    return caught == len(wrong)


def main(arguments):
    only = arguments[arguments.index("--only") + 1] if "--only" in arguments else ""
    problems = []
    examples, skipped = document_examples(problems)
    examples += cli_examples()
    examples = [example for example in examples if only in example.name]
    if "--list" in arguments:
        for problem in problems:
            print(f"FAIL  {problem}")
        for example in examples:
            print(f"run   {example.name} ({example.kind})")
        for name, reason in skipped:
            print(f"skip  {name}: {reason}")
        return 0
    failed = len(problems)
    if not only and not self_test():
        failed += 1
    for problem in problems:
        print(f"FAIL  {problem}")
    started = time.monotonic()
    for example in examples:
        with tempfile.TemporaryDirectory(prefix="kvod-examples-") as directory:
            workdir = pathlib.Path(directory)
            prepare_workdir(workdir)
            began = time.monotonic()
            try:
                RUNNERS[example.kind](example, workdir)
                print(f"ok    {example.name} ({example.kind}, {time.monotonic() - began:.1f} s)")
            except (Failure, RuntimeError, subprocess.TimeoutExpired, OSError, ValueError) as error:
                failed += 1
                print(f"FAIL  {example.name} ({example.kind}): {error}")
    print(f"examples: {len(examples) - failed + len(problems)} ran as documented, {failed} failed, "
          f"{len(skipped)} not run (tagged), in {time.monotonic() - started:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
