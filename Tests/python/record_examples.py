"""Records Protocol/examples/model.jsonl and collections.jsonl against a live kvod on the default model.

    python3 Tests/python/record_examples.py [--kvod .build/debug/kvod] [--check]

Each transcript is a plan of comments and requests below; the lines kvod sends back are recorded as `recv` (the long
`describe` results as `recvMatch`, with the part shown chosen here). Notifications to other connections are written
before the requester's own lines, as they are queued first. Re-record when kvod's output changes on purpose (ids,
messages), then read the diff against the spec before keeping it: the recording is only as right as kvod is.
With --check, nothing is written: the exit status says whether the files would change.
"""

import argparse
import json
import pathlib
import re
import socket
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "Protocol" / "examples"
ALL = ["new", "old", "prior"]
E = "department.employees"
T = "department.tags"


def dumps(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class Recording:
    """A kvod with the given arguments, named connections, and the transcript lines so far."""

    def __init__(self, binary, arguments):
        self.process = subprocess.Popen([str(binary), "--host", "127.0.0.1", "--port", "0", *arguments],
                                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        line = self.process.stdout.readline().decode()
        match = re.fullmatch(r"kvod listening on 127\.0\.0\.1:(\d+)\n", line)
        assert match, f"kvod's first line: {line!r}"
        self.port = int(match.group(1))
        self.connections, self.ids = {}, {}
        self.lines = [dumps({"kvod": arguments})]

    def comment(self, text):
        self.lines.append(dumps({"comment": text}))

    def _connection(self, name):
        if name not in self.connections:
            sock = socket.create_connection(("127.0.0.1", self.port))
            sock.settimeout(0.05)
            self.connections[name] = [sock, b""]
        return self.connections[name]

    def _read(self, name):
        connection = self._connection(name)
        while True:
            try:
                data = connection[0].recv(1 << 16)
            except socket.timeout:
                break
            if not data:
                break
            connection[1] += data
        messages = []
        while b"\n" in connection[1]:
            line, _, connection[1] = connection[1].partition(b"\n")
            messages.append(json.loads(line))
        return messages

    def send(self, name, method, params=None, match=None):
        """Sends a request from connection `name` and records everything it causes, on every connection, until the
        response; `match(response)` makes the response a recvMatch of what it returns."""
        self.ids[name] = self.ids.get(name, 0) + 1
        request = {"jsonrpc": "2.0", "id": self.ids[name], "method": method}
        if params is not None:
            request["params"] = params
        self._connection(name)
        for other in self.connections:
            assert not self._read(other), f"{other} received something unexpected"
        self.connections[name][0].sendall((dumps(request) + "\n").encode())
        self.lines.append(dumps({"conn": name, "send": request}))
        received = {other: [] for other in self.connections}
        deadline = time.monotonic() + 5
        while not any(m.get("id") == request["id"] for m in received[name] if isinstance(m, dict)):
            assert time.monotonic() < deadline, f"no response to {request}"
            time.sleep(0.02)
            for other in self.connections:
                received[other] += self._read(other)
        time.sleep(0.05)  # anything else would be a bug; let it show up in the recording
        for other in self.connections:
            received[other] += self._read(other)
        for other in [c for c in self.connections if c != name] + [name]:
            for message in received[other]:
                if match is not None and other == name and message.get("id") == request["id"]:
                    self.lines.append(dumps({"conn": other, "recvMatch": match(message)}))
                else:
                    self.lines.append(dumps({"conn": other, "recv": message}))

    def finish(self):
        for name in self.connections:
            assert not self._read(name), f"{name} received something after the last request"
        self.process.terminate()
        self.process.wait(timeout=10)
        return "\n".join(self.lines) + "\n"


def model(r):
    r.comment("kvod without --model serves the default model (docs/MODEL.md). LabColor's color depends on "
              "redComponent, greenComponent and blueComponent, which depend on lComponent, aComponent and bComponent.")
    r.send("A", "subscribe", {"path": "labColor.color", "options": ALL})
    r.send("A", "subscribe", {"path": "labColor.lComponent", "options": ALL})
    r.send("A", "get", {"path": "labColor.color"})
    r.comment("B sets lComponent to the int 100; it is a double, so validation stores 100.0 and the result says so. "
              "One change, one seq: priors in subscription order (color, lComponent), then afters in reverse.")
    r.send("B", "set", {"path": "labColor.lComponent", "value": 100})
    r.comment("lComponent does not accept null: it stores its nullValue 0 instead (setNilValueForKey:)")
    r.send("B", "set", {"path": "labColor.lComponent", "value": None})
    r.comment("computed keys are read-only (1006); keys a typed class does not declare are 1001")
    r.send("B", "set", {"path": "labColor.color", "value": "#FFFFFF"})
    r.send("B", "set", {"path": "labColor.alpha", "value": 1})
    r.comment('person.fullName is firstName + " " + lastName; with initial, the subscription starts with the current '
              "value")
    r.send("A", "subscribe", {"path": "person.fullName", "options": ["new", "initial"]})
    r.send("B", "set", {"path": "person.firstName", "value": "Ada"})
    r.send("B", "set", {"path": "person.lastName", "value": "Lovelace"})
    r.comment("account.openingBalance notifies only when its value changes (notify: onChange), and each change also "
              "increments itemChanged inside the same change: both priors before both values change, afters in "
              "reverse")
    r.send("A", "subscribe", {"path": "account.openingBalance", "options": ALL})
    r.send("A", "subscribe", {"path": "account.itemChanged", "options": ALL})
    r.send("B", "set", {"path": "account.openingBalance", "value": 10})
    r.comment("the same value again (10.0 is 10 after validation) is stored silently, notifies nobody and still "
              "takes a seq")
    r.send("B", "set", {"path": "account.openingBalance", "value": 10.0})
    r.send("B", "get", {"path": "account"})
    r.comment("validation: validate answers what set would store, without storing (no seq); contact.name is trimmed "
              'and null becomes ""')
    r.send("B", "validate", {"path": "contact.name", "value": "  Grace  "})
    r.send("B", "validate", {"path": "account.itemChanged", "value": " 42 "})
    r.send("B", "set", {"path": "contact.name", "value": "  Grace  "})
    r.send("B", "set", {"path": "contact.name", "value": None})
    r.comment("rejections change nothing and take no seq: 1002 with a reason")
    r.send("B", "validate", {"path": "contact.email", "value": "grace at example"})
    r.send("B", "set", {"path": "account.itemChanged", "value": 3.5})
    r.comment("describe with a path: the object's id, its class (declared keys with types, defaults, rules; computed "
              "keys with the dependencies kvod derived) and the JSON type of each value it holds. Only part of the "
              "result is shown.")

    def part_of_labcolor(response):
        result = response["result"]
        properties = result["class"]["properties"]
        shown = {"lComponent": properties["lComponent"]}
        for key in ["redComponent", "color"]:
            shown[key] = {"dependencies": properties[key]["dependencies"]}
        described = {"name": result["class"]["name"], "open": result["class"]["open"], "properties": shown}
        return {"jsonrpc": "2.0", "id": response["id"],
                "result": {"path": result["path"], "id": result["id"], "class": described, "keys": result["keys"]}}

    r.send("B", "describe", {"path": "labColor"}, match=part_of_labcolor)
    r.comment("describe without a path: the whole model; here, the root class's name and the Contact class")

    def part_of_model(response):
        result = response["result"]
        return {"jsonrpc": "2.0", "id": response["id"],
                "result": {"root": result["root"], "classes": {"Contact": result["classes"]["Contact"]}}}

    r.send("B", "describe", None, match=part_of_model)


def collections(r):
    r.comment("department.employees is an ordered to-many relationship of Employee objects, and totalSalary is "
              "computed as employees.@sum.salary (docs/MODEL.md). A observes both.")
    r.send("A", "subscribe", {"path": E, "options": ALL})
    r.send("A", "subscribe", {"path": "department.totalSalary", "options": ["new", "old"]})
    r.comment("insert without an index appends. Subscribers of the collection get kind insertion with the indexes "
              "and new = the inserted values (always an array; objects with their new $id); the prior notification "
              "carries the kind and indexes, never new. totalSalary, which reaches the collection through a computed "
              "key, gets a setting. The sum of no employees was the int 0.")
    r.send("B", "insert", {"path": E, "value": {"name": "Ada", "salary": 100}})
    r.comment("indexes refer to the array after the insertion: Bob lands at 0, Ada moves to 1, Cy lands at 2")
    r.send("B", "insert", {"path": E, "indexes": [0, 2],
                           "values": [{"name": "Bob", "salary": 50}, {"name": "Cy", "salary": 25}]})
    r.send("B", "get", {"path": E + ".name"})
    r.comment("remove: indexes as they were before the removal, sorted, and old = the removed values, also on the "
              "prior notification")
    r.send("B", "remove", {"path": E, "indexes": [2, 0]})
    r.comment("replace: new = the replacing values, old = the replaced ones")
    r.send("B", "replace", {"path": E, "index": 0, "value": {"name": "Dee", "salary": 70}})
    r.comment("the total follows the salary of every current employee; Bob ($8) was removed and no longer counts")
    r.send("B", "set", {"path": "$10.salary", "value": 80})
    r.send("B", "set", {"path": "$8.salary", "value": 1000})
    r.comment("an index beyond the end is 1004, with the index and the count; nothing changes")
    r.send("B", "remove", {"path": E, "index": 5})
    r.comment("department.tags is a set of strings: set mutations, no indexes. union reports only the members it "
              "actually added.")
    r.send("A", "subscribe", {"path": T, "options": ["new", "old"]})
    r.send("A", "subscribe", {"path": T + ".@count", "options": ["new"]})
    r.send("B", "union", {"path": T, "values": ["red", "blue"]})
    r.send("B", "union", {"path": T, "values": ["red", "green"]})
    r.comment("minus reports only the members it actually removed; setMembers is a replacement with old = removed, "
              "new = added")
    r.send("B", "minus", {"path": T, "values": ["blue", "pink"]})
    r.send("B", "setMembers", {"path": T, "values": ["green", "urgent"]})
    r.send("B", "insert", {"path": T, "index": 0, "value": "x"})
    r.comment('a link: {"$ref": ID} makes an existing employee the manager too; get writes an object met again as '
              '{"$ref": ID}')
    r.send("B", "set", {"path": "department.manager", "value": {"$ref": 10}})
    r.send("B", "get", {"path": "department.manager"})
    r.send("B", "set", {"path": "pair", "value": [{"$ref": 10}, {"$ref": 10}]})
    r.send("B", "get", {"path": "pair"})
    r.comment("a transaction applies its ops all or nothing as one change with one seq: priors for every affected "
              "key first (by the first op that reaches it), then the changes, then afters in reverse; each "
              "subscription once")
    r.send("B", "transaction", {"ops": [
        {"method": "insert", "params": {"path": E, "value": {"name": "Eve", "salary": 30}}},
        {"method": "union", "params": {"path": T, "values": ["hiring"]}},
        {"method": "set", "params": {"path": "department.name", "value": "R&D"}},
    ]})
    r.comment("a transaction whose op 2 fails: each op saw the state the earlier ops left (3 employees after op 1), "
              "the error is op 2's with data.op, nothing was applied and nobody was notified")
    r.send("B", "transaction", {"ops": [
        {"method": "set", "params": {"path": "department.name", "value": "Ops"}},
        {"method": "insert", "params": {"path": E, "value": {"name": "Fay", "salary": 10}}},
        {"method": "remove", "params": {"path": E, "index": 9}},
    ]})
    r.send("B", "get", {"path": "department.name"})
    r.send("B", "get", {"path": E + ".@count"})


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kvod", default=str(REPO / ".build" / "debug" / "kvod"))
    parser.add_argument("--check", action="store_true")
    options = parser.parse_args()
    changed = False
    for name, plan in [("model.jsonl", model), ("collections.jsonl", collections)]:
        recording = Recording(options.kvod, [])
        plan(recording)
        text = recording.finish()
        path = EXAMPLES / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            changed = True
            print(f"{path.relative_to(REPO)}: {'would change' if options.check else 'recorded'}")
            if not options.check:
                path.write_text(text, encoding="utf-8")
    return 1 if options.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
