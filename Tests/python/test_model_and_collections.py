"""The model layer and collections over the wire, from Python: kvod's default model (Sources/kvod/default-model.json,
docs/MODEL.md), `validate`, `describe`, the collection mutations, collection notifications, dependent keys over
to-many relationships, `$ref` links and transactions (Protocol/README.md, methods.md, errors.md).

Same client as test_kvod_client.py (tinyrpc, every message kvod sends validated against Protocol/schemas/, every
well-formed request validated against request.schema.json), but each test gets a fresh kvod on the default model
(fixture `connect_model`), so object ids and seqs are exact: the root is $0, labColor $1, person $2 (its address $3),
account $4, contact $5, department $6, and the first object a test creates is $7.

Where kvod contradicts the spec, the test says what the spec says and is marked xfail(strict=True) with the
evidence, so the discrepancy stays visible (and the mark must go once kvod is fixed).
"""

import json

import pytest

from test_kvod_client import (  # noqa: F401 (fixtures are found by name)
    INVALID_PARAMS,
    LIMIT_EXCEEDED,
    TYPE_MISMATCH,
    UNDEFINED_KEY,
    connect_model,
    connections,
    kvod_model,
    schemas,
    serve,
)

VALIDATION_FAILED = 1002
NULL_NOT_ALLOWED = 1003
INDEX_OUT_OF_RANGE = 1004
READ_ONLY = 1006

ALL = ["new", "old", "prior"]


def change(subscription, path, seq, kind="setting", **members):
    """The params of a change notification, as kvod must send them."""
    params = {"subscription": subscription, "path": path, "kind": kind, "seq": seq}
    params.update(members)
    return params


def changes(client, count):
    return [client.recv_change() for _ in range(count)]


def subscribe_all(client, paths, options=ALL):
    """Subscribes to each path in order; returns {path: subscription id}."""
    return {path: client.subscribe(path, options)["subscription"] for path in paths}


def keys_in_order(value):
    """An object's keys as kvod wrote them (json keeps member order; "$id" is checked to be first by the client)."""
    return [key for key in value if key != "$id"]


# ----------------------------------------------------------------------------------------------------------------------
# The schemas for the new methods and notifications


def test_schemas_for_the_model_and_collection_methods(schemas):
    def request(method, params=None, id=1):
        doc = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            doc["params"] = params
        return doc

    def note(**params):
        return {"jsonrpc": "2.0", "method": "change", "params": dict({"subscription": 1, "path": "a.list",
                                                                      "seq": 3}, **params)}

    def response(result=None, error=None):
        doc = {"jsonrpc": "2.0", "id": 1}
        doc.update({"result": result} if error is None else {"error": error})
        return doc

    accepted = {
        "request.schema.json": [
            request("validate", {"path": "contact.name", "value": "  Bob "}),
            request("validate", ["labColor.lComponent", "50"]),
            request("describe"),
            request("describe", {}),
            request("describe", {"path": "$6"}),
            request("describe", [""]),
            request("insert", {"path": "department.employees", "index": 0, "value": {"name": "Ada"}}),
            request("insert", {"path": "list", "indexes": [3, 0], "values": [1, {"$ref": 2}]}),
            request("insert", {"path": "list", "value": 1}),
            request("insert", {"path": "department.tags", "values": ["a", "b"]}),
            request("insert", ["$7.list", 0, "x"]),
            request("insert", {"path": "list", "index": -1, "value": 1}),  # valid JSON-RPC, answered with 1004
            request("remove", {"path": "list", "index": 0}),
            request("remove", {"path": "list", "indexes": [2, 0]}),
            request("remove", {"path": "department.tags", "values": ["a"]}),
            request("remove", ["list", 1]),
            request("replace", {"path": "list", "index": 0, "value": None}),
            request("replace", {"path": "list", "indexes": [0, 1], "values": [1, 2]}),
            request("replace", ["list", 0, "x"]),
            *[request(method, {"path": "department.tags", "values": ["x"]})
              for method in ["union", "minus", "intersect", "setMembers"]],
            request("union", ["department.tags", []]),
            request("transaction", {"ops": []}),
            request("transaction", {"ops": [
                {"method": "set", "params": {"path": "department.name", "value": "R&D"}},
                {"method": "set", "params": ["department.name", "R&D"]},
                {"method": "insert", "params": {"path": "department.employees", "value": {"name": "Bob"}}},
                {"method": "remove", "params": {"path": "department.employees", "indexes": [0]}},
                {"method": "replace", "params": ["list", 0, 1]},
                {"method": "union", "params": {"path": "department.tags", "values": ["x"]}},
                {"method": "setMembers", "params": {"path": "department.tags", "values": []}},
            ]}),
            request("transaction", [[{"method": "minus", "params": {"path": "t", "values": [1]}}]]),
            [request("insert", {"path": "l", "value": 1}, 1), request("union", {"path": "s", "values": [1]}, 2)],
        ],
        "notification.schema.json": [
            note(kind="insertion", indexes=[0, 2], new=[1, {"$id": 7, "name": "Ada"}]),
            note(kind="insertion", indexes=[0], prior=True),
            note(kind="insertion", new=["red"]),  # a set: no indexes
            note(kind="insertion", new=[]),
            note(kind="removal", indexes=[0, 2], old=["a", "b"], prior=True),
            note(kind="removal", indexes=[1], old=[{"$ref": 7}]),
            note(kind="removal", old=["blue"]),
            note(kind="replacement", indexes=[0], new=["x"], old=["y"]),
            note(kind="replacement", old=[], prior=True),
            note(kind="replacement", indexes=[1]),
            note(kind="setting", new=[1, 2], old=[1]),
            note(kind="setting", new=None, initial=True),
        ],
        "response.schema.json": [
            response({"value": 7.0}),
            response({"value": [{"$ref": 7}, {"name": "N", "salary": 3.0}]}),
            response({"seq": 3, "value": "Bob"}),
            response({"seq": 4}),
            response({"root": "Object", "classes": {"Object": {"name": "Object", "open": True, "properties": {}}}}),
            response({"path": "", "id": 0, "class": {"name": "Object", "open": True, "properties": {}},
                      "keys": {"a": "int", "list": "array", "n": "null"}}),
            response(error={"code": 1004, "message": "m", "data": {"path": "l", "index": 5, "count": 1}}),
            response(error={"code": 1004, "message": "m", "data": {"path": "l", "index": 9, "count": 3, "op": 2}}),
            response(error={"code": -32602, "message": "m", "data": {"op": 1}}),
            response(error={"code": -32602, "message": "m", "data": {"path": "a..b", "reason": "r", "op": 0}}),
            response(error={"code": 1002, "message": "m", "data": {"path": "$9.salary", "reason": "r", "op": 1}}),
            response(error={"code": 1003, "message": "m", "data": {"path": "g.serial"}}),
            response(error={"code": 1006, "message": "m", "data": {"path": "labColor.color", "op": 0}}),
        ],
    }
    rejected = {
        "request.schema.json": [
            request("validate", {"path": "contact.name"}),
            request("validate", {"path": "", "value": 1}),
            request("describe", {"path": "a", "x": 1}),
            request("describe", {"path": 5}),
            request("insert", {"path": "l"}),
            request("insert", {"path": "l", "index": 0, "values": [1]}),
            request("insert", {"path": "l", "indexes": [0], "value": 1}),
            request("insert", {"path": "l", "indexes": [0, 0], "values": [1, 2]}),
            request("insert", {"path": "l", "index": "0", "value": 1}),
            request("insert", {"path": "l", "value": 1, "values": [1]}),
            request("insert", {"path": "", "value": 1}),
            request("remove", {"path": "l", "index": 0, "values": [1]}),
            request("remove", {"path": "l"}),
            request("replace", {"path": "l", "index": 0}),
            request("replace", {"path": "l", "values": [1]}),
            request("union", {"path": "s", "value": 1}),
            request("union", {"path": "s", "values": 1}),
            request("minus", {"path": "s", "index": 0}),
            request("setMembers", {"path": "s"}),
            request("transaction", {}),
            request("transaction", {"ops": {}}),
            request("transaction", {"ops": [], "atomic": True}),
            request("transaction", {"ops": [{"method": "get", "params": {"path": "a"}}]}),
            request("transaction", {"ops": [{"method": "transaction", "params": {"ops": []}}]}),
            request("transaction", {"ops": [{"method": "set"}]}),
            request("transaction", {"ops": [{"method": "set", "params": {"path": "a"}}]}),
            request("transaction", {"ops": [{"method": "set", "params": {"path": "a", "value": 1}, "id": 1}]}),
            request("transaction", {"ops": [{"method": "union", "params": {"path": "a", "value": 1}}]}),
        ],
        "notification.schema.json": [
            note(kind="insertion", indexes=[0], new=[1], old=[]),  # an insertion has no old
            note(kind="removal", indexes=[0], new=[], old=[1]),  # a removal has no new
            note(kind="insertion", indexes=[0], new=1),  # collection values are arrays
            note(kind="removal", old="a"),
            note(kind="replacement", new=["x"], old="y"),
            note(kind="setting", indexes=[0], new=1),  # a setting has no indexes
            note(kind="insertion", indexes=[-1], new=[1]),
            note(kind="insertion", indexes=[0, 0], new=[1, 2]),
            note(kind="insertion", indexes=[0], new=[1], prior=True),  # a prior never carries new
            note(kind="insertion", new=[1], initial=True),  # an initial notification is a setting
            note(kind="setting", indexes="0"),
        ],
        "response.schema.json": [
            response({"value": {"$id": "x"}}),
            response({"seq": 4, "value": 1, "extra": 1}),
            response({"root": "Root"}),
            response({"root": "Root", "classes": {"Root": {"name": "Root", "open": True}}}),
            response({"root": "Root", "classes": {"Root": {"name": "Root", "open": True, "properties": {
                "x": {"type": "int", "nullable": True}}}}}),  # notify is always written
            response({"root": "Root", "classes": {"Root": {"name": "Root", "open": True, "properties": {
                "x": {"computed": "1"}}}}}),  # dependencies are always written
            response({"root": "Root", "classes": {"Root": {"name": "Root", "open": True, "properties": {
                "x": {"type": "int", "nullable": True, "notify": "sometimes"}}}}}),
            response({"path": "", "id": 0, "class": {"name": "Object", "open": True, "properties": {}},
                      "keys": {"a": "integer"}}),
            response(error={"code": 1004, "message": "m", "data": {"path": "l", "index": 5}}),
            response(error={"code": 1004, "message": "m", "data": {"path": "l", "index": 5, "count": 1, "op": -1}}),
            response(error={"code": -32602, "message": "m", "data": {"op": "1"}}),
            response(error={"code": 1002, "message": "m", "data": {"path": "p", "reason": "r", "ops": 1}}),
        ],
    }
    for name, instances in accepted.items():
        for instance in instances:
            schemas.validate(name, instance)
    for name, instances in rejected.items():
        for instance in instances:
            assert not schemas.is_valid(name, instance), f"{name} accepts {json.dumps(instance)}"
    mutation_results = ["insert", "remove", "replace", "union", "minus", "intersect", "setMembers", "transaction"]
    for method in mutation_results:
        schemas.validate(f"results/{method}.schema.json", {"seq": 12})
        assert not schemas.is_valid(f"results/{method}.schema.json", {"seq": 12, "value": 1})
    schemas.validate("results/set.schema.json", {"seq": 3, "value": {"name": "M", "salary": 3.0}})
    assert not schemas.is_valid("results/validate.schema.json", {"value": 1, "seq": 2})  # validate takes no seq


# ----------------------------------------------------------------------------------------------------------------------
# Dependent keys: LabColor, Person, Account


LAB = "labColor."


def test_labcolor_chain_priors_in_subscription_order_afters_reversed(connect_model):
    """The seeds' LabColor: lComponent reaches red, green, blue and color (color through all three), each
    subscription once; priors in subscription order, afters in reverse, all with the one seq of the set."""
    watcher, other, writer = connect_model("watcher"), connect_model("other"), connect_model("writer")
    # Subscribed deliberately out of dependency order.
    keys = ["color", "lComponent", "blueComponent", "aComponent", "redComponent", "greenComponent", "bComponent"]
    ids = subscribe_all(watcher, [LAB + key for key in keys])
    assert len(set(ids.values())) == len(keys)
    initial = other.subscribe(LAB + "color", ["new", "old", "initial"])
    theirs = initial["subscription"]
    assert initial["seq"] == 0 and theirs not in ids.values()
    assert other.recv_change() == change(theirs, LAB + "color", 0, new="#36333A", initial=True)

    def values():
        return {key: writer.get(LAB + key)["value"] for key in keys}

    before = values()
    assert before["color"] == "#36333A" and before["lComponent"] == 53.0
    assert writer.ok("set", {"path": LAB + "lComponent", "value": 100}) == {"seq": 1, "value": 100.0}
    after = values()
    assert after["color"] == "#FFF2FF" and after["lComponent"] == 100.0
    reached = [key for key in keys if key not in ("aComponent", "bComponent")]
    expected = ([change(ids[LAB + key], LAB + key, 1, old=before[key], prior=True) for key in reached]
                + [change(ids[LAB + key], LAB + key, 1, new=after[key], old=before[key]) for key in reached[::-1]])
    assert changes(watcher, len(expected)) == expected
    watcher.assert_quiet()
    assert other.recv_change() == change(theirs, LAB + "color", 1, new="#FFF2FF", old="#36333A")

    # aComponent reaches only green and color.
    before = after
    assert writer.ok("set", {"path": LAB + "aComponent", "value": 20.0}) == {"seq": 2}
    after = values()
    reached = ["color", "aComponent", "greenComponent"]
    expected = ([change(ids[LAB + key], LAB + key, 2, old=before[key], prior=True) for key in reached]
                + [change(ids[LAB + key], LAB + key, 2, new=after[key], old=before[key]) for key in reached[::-1]])
    assert changes(watcher, len(expected)) == expected
    assert other.recv_change() == change(theirs, LAB + "color", 2, new=after["color"], old=before["color"])

    # lComponent replaces null with 0 (setNilValueForKey:), and says so; with a and b at 0, color is then #000000.
    assert writer.ok("set", {"path": LAB + "aComponent", "value": 0}) == {"seq": 3, "value": 0.0}
    assert len(changes(watcher, 6)) == 6 and other.recv_change()["new"] == "#FFF2FF"
    assert writer.ok("set", {"path": LAB + "lComponent", "value": None}) == {"seq": 4, "value": 0.0}
    assert changes(watcher, 10)[-1] == change(ids[LAB + "color"], LAB + "color", 4, new="#000000", old="#FFF2FF")
    assert other.recv_change()["new"] == "#000000"

    # Computed keys are read-only, also through them; undeclared keys are 1001.
    for path, data_path in [("color", "color"), ("redComponent", "redComponent"), ("color.x", "color")]:
        assert writer.fail("set", {"path": LAB + path, "value": 1}, READ_ONLY, schema_valid=True) == {
            "path": LAB + data_path}
    for method, params in [("set", {"path": LAB + "alpha", "value": 1}), ("get", {"path": LAB + "alpha"}),
                           ("subscribe", {"path": LAB + "alpha"}), ("validate", {"path": LAB + "alpha", "value": 1})]:
        assert writer.fail(method, params, UNDEFINED_KEY, schema_valid=True) == {"path": LAB + "alpha"}
    assert writer.ok("set", {"path": "anything.else", "value": 1}) == {"seq": 5}  # failures took no seq
    watcher.assert_quiet()
    other.assert_quiet()


def test_full_name_follows_first_and_last_name_and_the_person_replaced(connect_model):
    watcher, writer = connect_model("watcher"), connect_model("writer")
    assert writer.ok("set", {"path": "keep", "value": {"$ref": 2}}) == {"seq": 1}  # the first person stays in the graph
    full_name = watcher.subscribe("person.fullName", ["new", "old", "initial"])
    assert full_name["seq"] == 1
    full_name = full_name["subscription"]
    assert watcher.recv_change() == change(full_name, "person.fullName", 1, new=" ", initial=True)
    city = watcher.subscribe("person.address.city", ["new", "old"])["subscription"]

    assert writer.ok("set", {"path": "person.firstName", "value": "Ada"}) == {"seq": 2}
    assert watcher.recv_change() == change(full_name, "person.fullName", 2, new="Ada ", old=" ")
    assert writer.ok("set", {"path": "person.lastName", "value": "Lovelace"}) == {"seq": 3}
    assert watcher.recv_change() == change(full_name, "person.fullName", 3, new="Ada Lovelace", old="Ada ")
    assert writer.get("person.fullName") == {"value": "Ada Lovelace", "seq": 3}

    # A new Person ($7, with its own new address $8): both subscriptions follow the path as it is now.
    assert writer.ok("set", {"path": "person", "value": {"firstName": "Alan", "lastName": "Turing"}}) == {"seq": 4}
    assert changes(watcher, 2) == [change(city, "person.address.city", 4, new="", old=""),
                                   change(full_name, "person.fullName", 4, new="Alan Turing", old="Ada Lovelace")]
    assert writer.get("person.address") == {"value": {"$id": 8, "street": "", "city": ""}, "seq": 4}
    # The old person ($2) is no longer on the path: changing it notifies nobody.
    assert writer.ok("set", {"path": "$2.firstName", "value": "Grace"}) == {"seq": 5}
    assert writer.get("keep.fullName") == {"value": "Grace Lovelace", "seq": 5}
    watcher.assert_quiet()
    assert writer.ok("set", {"path": "person.address", "value": {"city": "Paris"}}) == {"seq": 6}
    assert watcher.recv_change() == change(city, "person.address.city", 6, new="Paris", old="")
    assert writer.fail("set", {"path": "person.fullName", "value": "x"}, READ_ONLY, schema_valid=True) == {
        "path": "person.fullName"}
    assert writer.fail("set", {"path": "person", "value": {"firstName": "A", "nick": "T"}}, UNDEFINED_KEY,
                       schema_valid=True) == {"path": "person.nick"}
    watcher.assert_quiet()


@pytest.mark.parametrize("order", [["openingBalance", "itemChanged"], ["itemChanged", "openingBalance"]])
def test_account_notifies_on_change_only_with_item_changed_nested(connect_model, order):
    """The seeds' Listing 4 and nested will/did: openingBalance notifies only when it really changes, and each such
    change increments itemChanged inside the same change (one seq, priors in subscription order before both values
    change, afters reversed once both have)."""
    watcher, writer = connect_model("watcher"), connect_model("writer")
    ids = subscribe_all(watcher, ["account." + key for key in order])

    def expect(seq, balances, counts):
        before = {"openingBalance": balances[0], "itemChanged": counts[0]}
        after = {"openingBalance": balances[1], "itemChanged": counts[1]}
        assert changes(watcher, 4) == (
            [change(ids["account." + key], "account." + key, seq, old=before[key], prior=True) for key in order]
            + [change(ids["account." + key], "account." + key, seq, new=after[key], old=before[key])
               for key in order[::-1]])

    assert writer.ok("set", {"path": "account.openingBalance", "value": 10}) == {"seq": 1, "value": 10.0}
    expect(1, (0.0, 10.0), (0, 1))

    # The same value (after validation: 10.0, "10") stores silently, but still takes a seq.
    assert writer.ok("set", {"path": "account.openingBalance", "value": 10.0}) == {"seq": 2}
    assert writer.ok("set", {"path": "account.openingBalance", "value": "10"}) == {"seq": 3, "value": 10.0}
    watcher.assert_quiet()
    assert writer.get("account") == {"value": {"$id": 4, "openingBalance": 10.0, "itemChanged": 1}, "seq": 3}

    assert writer.ok("set", {"path": "account.openingBalance", "value": 12.5}) == {"seq": 4}
    expect(4, (10.0, 12.5), (1, 2))
    # itemChanged itself notifies always (its own policy), and increments nothing.
    assert writer.ok("set", {"path": "account.itemChanged", "value": 2}) == {"seq": 5}
    assert changes(watcher, 2) == [change(ids["account.itemChanged"], "account.itemChanged", 5, old=2, prior=True),
                                   change(ids["account.itemChanged"], "account.itemChanged", 5, new=2, old=2)]


# ----------------------------------------------------------------------------------------------------------------------
# Validation


def test_set_validates_and_reports_what_it_stored(connect_model):
    client = connect_model()
    cases = [  # (path, sent, what set's result reports as value, or None when it stored what was sent)
        ("labColor.lComponent", 100, 100.0),  # an int into a double
        ("labColor.lComponent", 100.0, None),
        ("labColor.lComponent", "1e1", 10.0),  # a numeric string
        ("labColor.aComponent", None, None),  # nullable: null stored as is
        ("account.itemChanged", "7", 7),
        ("account.itemChanged", " 42 ", 42),
        ("account.itemChanged", 3.0, 3),  # an integral double into an int
        ("contact.name", "  Bob  ", "Bob"),  # trim
        ("contact.name", None, ""),  # nullValue
        ("contact.name", "Ada", None),
        ("contact.email", " ada@example.org ", "ada@example.org"),
        ("contact.nickname", "  spaced  ", None),  # no trim rule
        ("department.tags", ["q", "q", "r"], ["q", "r"]),  # a set keeps each member once
    ]
    for seq, (path, sent, stored) in enumerate(cases, 1):
        expected = {"seq": seq} if stored is None else {"seq": seq, "value": stored}
        assert client.ok("set", {"path": path, "value": sent}) == expected, (path, sent)
        assert client.get(path) == {"value": sent if stored is None else stored, "seq": seq}, (path, sent)


def test_validation_rejections_change_nothing(connect_model):
    watcher, client = connect_model("watcher"), connect_model("client")
    subscribe_all(watcher, ["labColor.lComponent", "account.itemChanged", "contact.name", "contact.email",
                            "department.manager", "department.tags"])
    client.ok("insert", {"path": "department.employees", "value": {"name": "Ada", "salary": 10}})  # seq 1, $7
    watcher.assert_quiet()
    rejected = [  # (path, value, code, data)
        ("labColor.lComponent", "abc", VALIDATION_FAILED, "labColor.lComponent"),
        ("labColor.lComponent", True, VALIDATION_FAILED, "labColor.lComponent"),
        ("account.itemChanged", 3.5, VALIDATION_FAILED, "account.itemChanged"),
        ("account.itemChanged", "4x", VALIDATION_FAILED, "account.itemChanged"),
        ("contact.name", "x" * 101, VALIDATION_FAILED, "contact.name"),
        ("contact.email", "bob at example", VALIDATION_FAILED, "contact.email"),
        ("contact.email", 42, VALIDATION_FAILED, "contact.email"),  # no coercion into a string
        ("$7.salary", -1, VALIDATION_FAILED, "$7.salary"),
        ("department.manager", {"$ref": 1}, VALIDATION_FAILED, "department.manager"),  # a LabColor, not an Employee
        ("department.manager", "Ada", VALIDATION_FAILED, "department.manager"),
        ("department.manager", {"name": "Grace", "salary": -5}, VALIDATION_FAILED, "department.manager.salary"),
        ("department.manager", {"name": "Grace", "boss": 1}, UNDEFINED_KEY, "department.manager.boss"),
        ("department.manager", {"$ref": 999}, UNDEFINED_KEY, "$999"),
        ("department.tags", ["a", 5], VALIDATION_FAILED, "department.tags"),
        ("contact.phone", "1", UNDEFINED_KEY, "contact.phone"),
        ("labColor.blueComponent", 1, READ_ONLY, "labColor.blueComponent"),
        ("department.totalSalary", 1, READ_ONLY, "department.totalSalary"),
    ]
    for path, value, code, data_path in rejected:
        for method in ["validate", "set"]:
            data = client.fail(method, {"path": path, "value": value}, code, schema_valid=True)
            assert data["path"] == data_path, (method, path, value, data)
            if code == VALIDATION_FAILED:
                assert set(data) == {"path", "reason"} and data["reason"], data
            else:
                assert data == {"path": data_path}
    assert client.set("labColor.lComponent", 53.0) == 2  # nothing above took a seq
    assert client.get("")["value"]["department"] == {"$id": 6, "employees": [{"$id": 7, "name": "Ada",
                                                                              "salary": 10.0}], "tags": []}
    assert [c["seq"] for c in changes(watcher, 2)] == [2, 2]


def test_a_property_that_refuses_null_is_1003(tmp_path_factory, schemas):
    """The default model replaces null wherever it refuses it, so 1003 (null not allowed) needs a model of its own."""
    directory = tmp_path_factory.mktemp("kvod-1003")
    model = directory / "gadgets.json"
    model.write_text(json.dumps({"root": "Root", "classes": {
        "Root": {"open": True, "properties": {"gadget": {"type": "Gadget", "default": {}}}},
        "Gadget": {"properties": {
            "serial": {"type": "string", "default": "G-1", "nullable": False},
            "size": {"type": "string", "enum": ["S", "M", "L"]},
            "count": {"type": "int", "default": 0, "min": 0, "max": 10, "nullable": False},
        }},
    }}))
    server = serve(directory, schemas, ["--model", str(model)])
    kvod = next(server)
    try:
        session = connections(kvod, schemas)
        connect = next(session)
        client = connect()
        for path in ["gadget.serial", "gadget.count"]:
            for method in ["validate", "set"]:
                assert client.fail(method, {"path": path, "value": None}, NULL_NOT_ALLOWED, schema_valid=True) == {
                    "path": path}
        assert client.ok("validate", {"path": "gadget.count", "value": "7"}) == {"value": 7}
        assert client.fail("set", {"path": "gadget.count", "value": 11}, VALIDATION_FAILED, schema_valid=True)[
            "path"] == "gadget.count"
        assert client.fail("set", {"path": "gadget.size", "value": "XL"}, VALIDATION_FAILED, schema_valid=True)[
            "path"] == "gadget.size"
        assert client.ok("set", {"path": "gadget.size", "value": None}) == {"seq": 1}  # nullable by default
        assert client.get("gadget") == {"value": {"$id": 1, "serial": "G-1", "size": None, "count": 0}, "seq": 1}
        next(session, None)
    finally:
        next(server, None)


def test_validate_stores_nothing_notifies_nobody_takes_no_seq(connect_model):
    watcher, client = connect_model("watcher"), connect_model("client")
    subscribe_all(watcher, ["contact.name", "labColor.color"])
    assert client.ok("validate", {"path": "contact.name", "value": "  Bob "}) == {"value": "Bob"}
    assert client.ok("validate", ["contact.name", None]) == {"value": ""}  # by position: path, value
    assert client.ok("validate", {"path": "labColor.lComponent", "value": 7}) == {"value": 7.0}
    assert client.ok("validate", {"path": "labColor.lComponent", "value": "1e3"}) == {"value": 1000.0}
    assert client.ok("validate", {"path": "account.itemChanged", "value": " 42 "}) == {"value": 42}
    assert client.ok("validate", {"path": "department.tags", "value": ["a", "a"]}) == {"value": ["a"]}
    assert client.ok("validate", {"path": "anything", "value": [1, "x", None]}) == {"value": [1, "x", None]}
    # Objects set would create have no id yet: their keys come back validated, without "$id".
    assert client.ok("validate", {"path": "department.employees", "value": [{"name": "N", "salary": "3"}]}) == {
        "value": [{"name": "N", "salary": 3.0}]}
    watcher.assert_quiet()
    assert client.get("contact") == {"value": {"$id": 5, "name": ""}, "seq": 0}
    assert client.get("department.employees") == {"value": [], "seq": 0}
    assert client.set("contact.name", "Ada") == 1  # validate took no seq
    assert [c["seq"] for c in changes(watcher, 2)] == [1, 1]


# ----------------------------------------------------------------------------------------------------------------------
# describe


def test_describe_the_model_and_objects(connect_model):
    client = connect_model()
    model = client.ok("describe")
    assert client.ok("describe", {}) == model and client.ok("describe", []) == model
    assert model["root"] == "Root"
    assert list(model["classes"]) == ["Root", "LabColor", "Person", "Address", "Account", "Contact", "Department",
                                      "Employee"]
    for name, described in model["classes"].items():
        assert described["name"] == name and described["open"] == (name == "Root")
    lab = model["classes"]["LabColor"]["properties"]
    assert list(lab) == ["lComponent", "aComponent", "bComponent", "redComponent", "greenComponent",
                         "blueComponent", "color"]
    assert lab["lComponent"] == {"type": "double", "default": 53.0, "nullable": False, "nullValue": 0.0,
                                 "notify": "always"}
    assert lab["aComponent"] == {"type": "double", "default": 0.0, "nullable": True, "notify": "always"}
    assert lab["redComponent"]["dependencies"] == ["lComponent"]
    assert lab["greenComponent"]["dependencies"] == ["lComponent", "aComponent"]
    assert lab["blueComponent"]["dependencies"] == ["lComponent", "bComponent"]
    assert lab["color"]["dependencies"] == ["redComponent", "greenComponent", "blueComponent"]
    assert lab["color"]["computed"].startswith('format("#%02X%02X%02X", ')
    person = model["classes"]["Person"]["properties"]
    assert person["fullName"] == {"computed": 'firstName + " " + lastName', "dependencies": ["firstName", "lastName"]}
    assert person["address"] == {"type": "Address", "default": {}, "nullable": True, "notify": "always"}
    assert model["classes"]["Account"]["properties"]["openingBalance"] == {
        "type": "double", "default": 0.0, "nullable": True, "notify": "onChange", "increments": ["itemChanged"]}
    contact = model["classes"]["Contact"]["properties"]
    assert contact["name"] == {"type": "string", "default": "", "nullable": False, "nullValue": "",
                               "notify": "always", "trim": True, "maxLength": 100}
    assert contact["email"]["pattern"] == "^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$" and contact["email"]["trim"] is True
    department = model["classes"]["Department"]["properties"]
    assert list(department) == ["name", "manager", "employees", "tags", "totalSalary"]
    assert department["employees"]["type"] == "[Employee]" and department["employees"]["default"] == []
    assert department["tags"]["type"] == "set<string>"
    assert department["totalSalary"] == {"computed": "employees.@sum.salary",
                                         "dependencies": ["employees.@sum.salary"]}
    assert model["classes"]["Employee"]["properties"]["salary"]["min"] == 0

    # An object: its class, and the JSON type of each value it holds now.
    client.ok("insert", {"path": "department.employees", "value": {"name": "Ada"}})  # $7
    assert client.ok("describe", {"path": "department"}) == {
        "path": "department", "id": 6, "class": model["classes"]["Department"],
        "keys": {"employees": "array", "tags": "array"}}
    assert client.ok("describe", ["$7"]) == {"path": "$7", "id": 7, "class": model["classes"]["Employee"],
                                             "keys": {"name": "string", "salary": "double"}}
    assert client.ok("describe", {"path": ""})["class"] == model["classes"]["Root"]
    client.set("box", {"n": 1, "list": [], "nothing": None})  # an open object ($8)
    assert client.ok("describe", {"path": "box"}) == {
        "path": "box", "id": 8, "class": {"name": "Object", "open": True, "properties": {}},
        "keys": {"n": "int", "list": "array", "nothing": "null"}}
    for path in ["labColor.color", "box.n", "nothing.here"]:
        assert client.fail("describe", {"path": path}, TYPE_MISMATCH, schema_valid=True)["path"] == path
    assert client.fail("describe", {"path": "labColor.alpha"}, UNDEFINED_KEY, schema_valid=True) == {
        "path": "labColor.alpha"}
    client.fail("describe", {"path": 5}, INVALID_PARAMS)
    client.fail("describe", {"where": "box"}, INVALID_PARAMS)


# ----------------------------------------------------------------------------------------------------------------------
# Ordered collections


EMPLOYEES = "department.employees"


def test_ordered_insert_remove_replace_notifications(connect_model):
    watcher, writer = connect_model("watcher"), connect_model("writer")
    full = watcher.subscribe(EMPLOYEES, ALL)["subscription"]  # 1
    bare = watcher.subscribe(EMPLOYEES)["subscription"]  # 2: kind, indexes and seq only
    olds = watcher.subscribe(EMPLOYEES, ["old", "prior"])["subscription"]  # 3

    def expect(seq, kind, indexes, new=None, old=None):
        values = {}
        if new is not None:
            values["new"] = new
        if old is not None:
            values["old"] = old
        prior_old = {"old": old} if old is not None else {}
        got = changes(watcher, 5)
        assert got == [
            change(full, EMPLOYEES, seq, kind, indexes=indexes, prior=True, **prior_old),
            change(olds, EMPLOYEES, seq, kind, indexes=indexes, prior=True, **prior_old),
            change(olds, EMPLOYEES, seq, kind, indexes=indexes, **prior_old),
            change(bare, EMPLOYEES, seq, kind, indexes=indexes),
            change(full, EMPLOYEES, seq, kind, indexes=indexes, **values),
        ]

    ada = {"$id": 7, "name": "Ada", "salary": 100.0}
    bob = {"$id": 8, "name": "Bob", "salary": 50.0}
    cy = {"$id": 9, "name": "Cy", "salary": 25.0}
    dee = {"$id": 10, "name": "Dee", "salary": 7.0}
    assert writer.ok("insert", {"path": EMPLOYEES, "value": {"name": "Ada", "salary": 100}}) == {"seq": 1}
    expect(1, "insertion", [0], new=[ada])
    # Indexes refer to the array after the insertion; pairs are taken in index order.
    assert writer.ok("insert", {"path": EMPLOYEES, "indexes": [0, 2],
                                "values": [{"name": "Bob", "salary": "50"}, {"name": "Cy", "salary": 25}]}) == {
        "seq": 2}
    expect(2, "insertion", [0, 2], new=[bob, cy])
    assert writer.get(EMPLOYEES) == {"value": [bob, ada, cy], "seq": 2}

    assert writer.ok("remove", {"path": EMPLOYEES, "indexes": [2, 0]}) == {"seq": 3}
    expect(3, "removal", [0, 2], old=[bob, cy])
    assert writer.get(EMPLOYEES) == {"value": [ada], "seq": 3}

    assert writer.ok("replace", {"path": EMPLOYEES, "index": 0, "value": {"name": "Dee", "salary": 7}}) == {"seq": 4}
    expect(4, "replacement", [0], new=[dee], old=[ada])
    assert writer.ok("insert", [EMPLOYEES, 1, {"$ref": 7}]) == {"seq": 5}  # by position; Ada back, by reference
    expect(5, "insertion", [1], new=[ada])
    assert writer.ok("remove", [EMPLOYEES, 0]) == {"seq": 6}
    expect(6, "removal", [0], old=[dee])
    assert writer.get(EMPLOYEES) == {"value": [ada], "seq": 6}

    # Failures change nothing, notify nobody, take no seq.
    assert writer.fail("remove", {"path": EMPLOYEES, "index": 5}, INDEX_OUT_OF_RANGE, schema_valid=True) == {
        "path": EMPLOYEES, "index": 5, "count": 1}
    assert writer.fail("insert", {"path": EMPLOYEES, "index": 2, "value": {}}, INDEX_OUT_OF_RANGE,
                       schema_valid=True) == {"path": EMPLOYEES, "index": 2, "count": 1}
    assert writer.fail("replace", {"path": EMPLOYEES, "indexes": [0, 1], "values": [{}, {}]}, INDEX_OUT_OF_RANGE,
                       schema_valid=True) == {"path": EMPLOYEES, "index": 1, "count": 1}
    writer.fail("insert", {"path": EMPLOYEES, "indexes": [0, 0], "values": [{}, {}]}, INVALID_PARAMS)
    assert writer.fail("insert", {"path": EMPLOYEES, "indexes": [0], "values": [{}, {}]}, INVALID_PARAMS,
                       schema_valid=True)["path"] == EMPLOYEES
    writer.fail("remove", {"path": EMPLOYEES, "index": 0, "values": [1]}, INVALID_PARAMS)
    writer.fail("replace", {"path": EMPLOYEES, "index": 0}, INVALID_PARAMS)
    assert writer.fail("insert", {"path": EMPLOYEES, "value": {"salary": -1}}, VALIDATION_FAILED,
                       schema_valid=True)["path"] == EMPLOYEES + ".salary"
    assert writer.fail("insert", {"path": EMPLOYEES, "value": 5}, VALIDATION_FAILED,
                       schema_valid=True)["path"] == EMPLOYEES
    for method in ["union", "minus", "intersect", "setMembers"]:
        assert writer.fail(method, {"path": EMPLOYEES, "values": []}, TYPE_MISMATCH, schema_valid=True)[
            "path"] == EMPLOYEES
    assert writer.fail("insert", {"path": "department.name", "value": "x"}, TYPE_MISMATCH, schema_valid=True)[
        "path"] == "department.name"
    assert writer.fail("insert", {"path": "labColor.lComponent", "value": 1}, TYPE_MISMATCH, schema_valid=True)[
        "path"] == "labColor.lComponent"
    watcher.assert_quiet()
    assert writer.set("department.name", "R&D") == 7


def test_arrays_on_open_objects_are_ordered_collections(connect_model):
    """An array on an open object (here the root) is an ordered relationship of scalars; a missing or null one
    counts as empty."""
    watcher, writer = connect_model("watcher"), connect_model("writer")
    subscription = watcher.subscribe("list", ["new", "old"])["subscription"]
    assert writer.ok("insert", {"path": "list", "values": [1, 2]}) == {"seq": 1}  # missing: appended to []
    assert watcher.recv_change() == change(subscription, "list", 1, "insertion", indexes=[0, 1], new=[1, 2])
    assert writer.ok("insert", {"path": "list", "indexes": [0, 3], "values": ["a", "b"]}) == {"seq": 2}
    assert watcher.recv_change() == change(subscription, "list", 2, "insertion", indexes=[0, 3], new=["a", "b"])
    assert writer.ok("insert", {"path": "list", "indexes": [1, 0], "values": ["x", "y"]}) == {"seq": 3}
    assert watcher.recv_change() == change(subscription, "list", 3, "insertion", indexes=[0, 1], new=["y", "x"])
    assert writer.get("list") == {"value": ["y", "x", "a", 1, 2, "b"], "seq": 3}
    assert writer.ok("replace", {"path": "list", "indexes": [2, 0], "values": ["P", "Q"]}) == {"seq": 4}
    assert watcher.recv_change() == change(subscription, "list", 4, "replacement", indexes=[0, 2], new=["Q", "P"],
                                           old=["y", "a"])
    assert writer.ok("remove", {"path": "list", "indexes": [5, 0, 3]}) == {"seq": 5}
    assert watcher.recv_change() == change(subscription, "list", 5, "removal", indexes=[0, 3, 5], old=["Q", 1, "b"])
    assert writer.get("list") == {"value": ["x", "P", 2], "seq": 5}
    # set on the whole collection stays a setting.
    assert writer.ok("set", {"path": "list", "value": [9]}) == {"seq": 6}
    assert watcher.recv_change() == change(subscription, "list", 6, new=[9], old=["x", "P", 2])
    writer.set("empty", None)  # seq 7
    assert writer.ok("insert", {"path": "empty", "value": "first"}) == {"seq": 8}
    assert writer.get("empty") == {"value": ["first"], "seq": 8}
    # On the mutating connection too, the notifications come before the response.
    own = writer.subscribe("empty", ["new"])["subscription"]
    request = writer.request("insert", {"path": "empty", "index": 0, "value": "zeroth"})
    assert writer.recv_change() == change(own, "empty", 9, "insertion", indexes=[0], new=["zeroth"])
    assert writer.recv_response(request).result == {"seq": 9}


# ----------------------------------------------------------------------------------------------------------------------
# Sets


TAGS = "department.tags"


def test_set_mutations_on_department_tags(connect_model):
    watcher, writer = connect_model("watcher"), connect_model("writer")
    full = watcher.subscribe(TAGS, ALL)["subscription"]  # 1
    count = watcher.subscribe(TAGS + ".@count", ["new", "old"])["subscription"]  # 2

    def expect(seq, kind, new=None, old=None, count_new=None, count_old=None):
        values = {k: v for k, v in (("new", new), ("old", old)) if v is not None}
        prior_old = {"old": old} if old is not None else {}
        assert changes(watcher, 3) == [  # sets have no indexes
            change(full, TAGS, seq, kind, prior=True, **prior_old),
            change(count, TAGS + ".@count", seq, new=count_new, old=count_old),  # a setting of the count
            change(full, TAGS, seq, kind, **values),
        ]

    assert writer.ok("union", {"path": TAGS, "values": ["red", "blue"]}) == {"seq": 1}
    expect(1, "insertion", new=["red", "blue"], count_new=2, count_old=0)
    assert writer.ok("union", {"path": TAGS, "values": ["red", "green"]}) == {"seq": 2}
    expect(2, "insertion", new=["green"], count_new=3, count_old=2)  # only the members actually added
    assert writer.ok("insert", {"path": TAGS, "values": ["pink"]}) == {"seq": 3}  # insert without indexes: union
    expect(3, "insertion", new=["pink"], count_new=4, count_old=3)
    assert writer.ok("minus", {"path": TAGS, "values": ["blue", "nope"]}) == {"seq": 4}
    expect(4, "removal", old=["blue"], count_new=3, count_old=4)  # only the members actually removed
    assert writer.ok("remove", {"path": TAGS, "values": ["pink"]}) == {"seq": 5}  # remove by value
    expect(5, "removal", old=["pink"], count_new=2, count_old=3)
    assert writer.get(TAGS) == {"value": ["green", "red"], "seq": 5}  # a set's members are kept sorted
    assert writer.ok("intersect", {"path": TAGS, "values": ["green", "zzz"]}) == {"seq": 6}
    expect(6, "removal", old=["red"], count_new=1, count_old=2)  # removal of the others
    assert writer.ok("setMembers", {"path": TAGS, "values": ["green", "a", "b"]}) == {"seq": 7}
    expect(7, "replacement", new=["a", "b"], old=[], count_new=3, count_old=1)  # old = removed, new = added
    assert writer.ok("setMembers", [TAGS, ["a", "c"]]) == {"seq": 8}  # by position: path, values
    expect(8, "replacement", new=["c"], old=["b", "green"], count_new=2, count_old=3)  # old in the set's order
    assert writer.get(TAGS) == {"value": ["a", "c"], "seq": 8}

    assert writer.fail("union", {"path": TAGS, "values": ["ok", 5]}, VALIDATION_FAILED, schema_valid=True)[
        "path"] == TAGS
    for method, params in [("insert", {"path": TAGS, "index": 0, "value": "x"}),
                           ("remove", {"path": TAGS, "index": 0}),
                           ("replace", {"path": TAGS, "indexes": [0], "values": ["x"]})]:
        assert writer.fail(method, params, TYPE_MISMATCH, schema_valid=True)["path"] == TAGS  # no indexes on a set
    writer.fail("union", {"path": TAGS}, INVALID_PARAMS)
    writer.fail("union", {"path": TAGS, "values": "x"}, INVALID_PARAMS)
    watcher.assert_quiet()
    assert writer.get(TAGS) == {"value": ["a", "c"], "seq": 8}


# ----------------------------------------------------------------------------------------------------------------------
# To-many dependencies, operators, references


def test_total_salary_follows_inserts_removes_and_salaries(connect_model):
    watcher, writer = connect_model("watcher"), connect_model("writer")
    total = watcher.subscribe("department.totalSalary", ALL)["subscription"]

    def expect(seq, old, new):
        assert changes(watcher, 2) == [change(total, "department.totalSalary", seq, old=old, prior=True),
                                       change(total, "department.totalSalary", seq, new=new, old=old)]

    assert writer.get("department.totalSalary") == {"value": 0, "seq": 0}  # the sum of nothing is the int 0
    writer.ok("insert", {"path": EMPLOYEES, "values": [{"name": "Ada", "salary": 100}, {"name": "Bob"}]})  # $7, $8
    expect(1, 0, 100.0)
    assert writer.ok("set", {"path": "$8.salary", "value": 50}) == {"seq": 2, "value": 50.0}
    expect(2, 100.0, 150.0)
    writer.ok("replace", {"path": EMPLOYEES, "index": 0, "value": {"name": "Cy", "salary": 10}})  # $9 for Ada
    expect(3, 150.0, 60.0)
    # Ada ($7) is no longer an employee: her salary no longer affects the total.
    writer.set("$7.salary", 1000)  # seq 4
    watcher.assert_quiet()
    writer.ok("remove", {"path": EMPLOYEES, "index": 1})  # Bob
    expect(5, 60.0, 10.0)
    writer.set("$8.salary", 1)  # seq 6
    watcher.assert_quiet()
    writer.ok("set", {"path": EMPLOYEES, "value": [{"$ref": 7}, {"$ref": 8}]})  # seq 7: both back, by reference
    expect(7, 10.0, 1001.0)
    writer.set("$9.salary", 5)  # seq 8: Cy is out now
    watcher.assert_quiet()
    writer.ok("remove", {"path": EMPLOYEES, "indexes": [0, 1]})
    expect(9, 1001.0, 0)
    assert writer.get("department.employees.@sum.salary") == {"value": 0, "seq": 9}


def test_count_and_key_paths_through_collections(connect_model):
    watcher, writer = connect_model("watcher"), connect_model("writer")
    paths = [EMPLOYEES + ".@count", EMPLOYEES + ".name", EMPLOYEES + ".@max.salary", "department.totalSalary"]
    ids = subscribe_all(watcher, paths, ["new", "old"])
    for operator, empty in [("@count", 0), ("@sum.salary", 0), ("@avg.salary", None), ("@min.salary", None),
                            ("@max.salary", None), ("name", []), ("@distinctUnionOfObjects.name", [])]:
        assert writer.get(f"{EMPLOYEES}.{operator}") == {"value": empty, "seq": 0}, operator
    writer.ok("insert", {"path": EMPLOYEES, "values": [{"name": "Ada", "salary": 30}, {"name": "Bob", "salary": None},
                                                        {"name": "Ada", "salary": 10}]})
    new = {paths[0]: 3, paths[1]: ["Ada", "Bob", "Ada"], paths[2]: 30.0, paths[3]: 40.0}
    old = {paths[0]: 0, paths[1]: [], paths[2]: None, paths[3]: 0}
    assert changes(watcher, 4) == [change(ids[path], path, 1, new=new[path], old=old[path]) for path in paths[::-1]]
    assert writer.get(EMPLOYEES + ".@avg.salary")["value"] == pytest.approx(40 / 3)  # null counts as 0
    assert writer.get(EMPLOYEES + ".@min.salary")["value"] == 10.0  # nulls skipped
    assert writer.get(EMPLOYEES + ".@distinctUnionOfObjects.name")["value"] in (["Ada", "Bob"], ["Bob", "Ada"])
    # A salary change reaches the computed paths, but not @count or name.
    writer.set("$8.salary", 100)  # seq 2
    assert changes(watcher, 2) == [change(ids[paths[3]], paths[3], 2, new=140.0, old=40.0),
                                   change(ids[paths[2]], paths[2], 2, new=100.0, old=30.0)]
    watcher.assert_quiet()


def _check_links(value, seen=None):
    """Every object is written in full once, with "$id"; any later meeting of it is {"$ref": ID} to an object
    written earlier in the document (README.md#values)."""
    seen = set() if seen is None else seen
    if isinstance(value, list):
        for item in value:
            _check_links(item, seen)
    elif isinstance(value, dict):
        if "$ref" in value:
            assert list(value) == ["$ref"] and value["$ref"] in seen, value
        else:
            assert value["$id"] not in seen, f"object {value['$id']} written twice"
            seen.add(value["$id"])
            for key, item in value.items():
                if key != "$id":
                    _check_links(item, seen)
    return seen


def test_refs_and_cycles_in_get(connect_model):
    watcher, client = connect_model("watcher"), connect_model("client")
    client.ok("insert", {"path": EMPLOYEES, "values": [{"name": "Ada", "salary": 1}, {"name": "Bob", "salary": 2}]})
    assert client.ok("set", {"path": "department.manager", "value": {"$ref": 8, "$id": 123}}) == {"seq": 2}
    department = client.get("department")["value"]
    assert _check_links(department) == {6, 7, 8}
    assert client.get("department.manager") == {"value": {"$id": 8, "name": "Bob", "salary": 2.0}, "seq": 2}
    assert client.get("$8.name") == {"value": "Bob", "seq": 2}

    # A cycle on open objects.
    client.set("loop", {"name": "L"})  # $9, seq 3
    client.set("loop.self", {"$ref": 9})
    client.set("loop.friends", [{"$ref": 9}, {"back": {"$ref": 9}}, {"$ref": 8}])  # the new object is $10
    assert client.get("loop") == {"value": {"$id": 9, "name": "L", "self": {"$ref": 9}, "friends": [
        {"$ref": 9}, {"$id": 10, "back": {"$ref": 9}}, {"$id": 8, "name": "Bob", "salary": 2.0}]}, "seq": 5}
    assert client.get("loop.self.self.self.name") == {"value": "L", "seq": 5}
    assert client.get("$10.back.friends.@count") == {"value": 3, "seq": 5}
    _check_links(client.get("")["value"])

    # Removing one reference leaves observers that reach the object through another.
    subscription = watcher.subscribe("department.manager.salary", ["new", "old"])["subscription"]
    client.ok("remove", {"path": EMPLOYEES, "index": 1})  # Bob leaves the employees, stays the manager: seq 6
    client.set("$8.salary", 3)  # seq 7
    assert watcher.recv_change() == change(subscription, "department.manager.salary", 7, new=3.0, old=2.0)
    assert client.fail("set", {"path": "department.manager", "value": {"$ref": 999}}, UNDEFINED_KEY,
                       schema_valid=True) == {"path": "$999"}
    assert client.fail("get", {"path": "$999.name"}, UNDEFINED_KEY, schema_valid=True) == {"path": "$999"}


def test_get_shows_declared_keys_in_declaration_order(connect_model):
    client = connect_model()
    client.set("person", {"lastName": "Turing", "firstName": "Alan"})
    assert keys_in_order(client.get("person")["value"]) == ["firstName", "lastName", "address"]
    client.set("department.manager", {"name": "Grace"})
    assert keys_in_order(client.get("department")["value"]) == ["manager", "employees", "tags"]


# ----------------------------------------------------------------------------------------------------------------------
# Transactions


def test_transaction_is_one_change_with_one_seq(connect_model):
    watcher, writer = connect_model("watcher"), connect_model("writer")
    writer.ok("insert", {"path": EMPLOYEES, "value": {"name": "Ada", "salary": 100}})  # $7, seq 1
    paths = ["department.totalSalary", EMPLOYEES, "department.name", TAGS]
    ids = subscribe_all(watcher, paths)
    ops = [
        {"method": "set", "params": {"path": "department.name", "value": "R&D"}},
        {"method": "insert", "params": {"path": EMPLOYEES, "value": {"name": "Bob", "salary": 50}}},
        {"method": "union", "params": {"path": TAGS, "values": ["x"]}},
        {"method": "set", "params": ["department.name", "Research"]},  # the same key again; params by position
    ]
    assert writer.ok("transaction", {"ops": ops}) == {"seq": 2}
    bob = {"$id": 8, "name": "Bob", "salary": 50.0}
    # Priors by the first op that reaches each key (name: op 0; totalSalary and employees: op 1, in subscription
    # order; tags: op 2), then afters in reverse; each subscription once, with the whole change.
    assert changes(watcher, 8) == [
        change(ids["department.name"], "department.name", 2, old=None, prior=True),
        change(ids["department.totalSalary"], "department.totalSalary", 2, old=100.0, prior=True),
        change(ids[EMPLOYEES], EMPLOYEES, 2, "insertion", indexes=[1], prior=True),
        change(ids[TAGS], TAGS, 2, "insertion", prior=True),
        change(ids[TAGS], TAGS, 2, "insertion", new=["x"]),
        change(ids[EMPLOYEES], EMPLOYEES, 2, "insertion", indexes=[1], new=[bob]),
        change(ids["department.totalSalary"], "department.totalSalary", 2, new=150.0, old=100.0),
        change(ids["department.name"], "department.name", 2, new="Research", old=None),
    ]
    watcher.assert_quiet()

    # Two ops on one collection: one setting change with the whole old and new values.
    ada = {"$id": 7, "name": "Ada", "salary": 100.0}
    assert writer.ok("transaction", [[
        {"method": "insert", "params": {"path": EMPLOYEES, "index": 0, "value": {"name": "Cy", "salary": 1}}},
        {"method": "remove", "params": {"path": EMPLOYEES, "index": 1}},  # Ada, at index 1 after the insert
    ]]) == {"seq": 3}
    cy = {"$id": 9, "name": "Cy", "salary": 1.0}
    assert changes(watcher, 4) == [
        change(ids["department.totalSalary"], "department.totalSalary", 3, old=150.0, prior=True),
        change(ids[EMPLOYEES], EMPLOYEES, 3, old=[ada, bob], prior=True),
        change(ids[EMPLOYEES], EMPLOYEES, 3, new=[cy, bob], old=[ada, bob]),
        change(ids["department.totalSalary"], "department.totalSalary", 3, new=51.0, old=150.0),
    ]
    assert writer.get(EMPLOYEES) == {"value": [cy, bob], "seq": 3}
    assert writer.set("department.name", "Lab") == 4  # one seq per transaction
    changes(watcher, 2)


def test_a_failed_transaction_applies_nothing_and_notifies_nobody(connect_model):
    watcher, writer = connect_model("watcher"), connect_model("writer")
    writer.ok("insert", {"path": EMPLOYEES, "values": [{"name": "Ada", "salary": 100}, {"name": "Bob"}]})  # seq 1
    subscribe_all(watcher, ["department.name", EMPLOYEES, "department.totalSalary", TAGS, "$7.salary"])
    before = writer.get("")["value"]

    def failing(ops, code):
        data = writer.fail("transaction", {"ops": ops}, code, schema_valid=True)
        watcher.assert_quiet()
        assert writer.get("") == {"value": before, "seq": 1}
        return data

    set_name = {"method": "set", "params": {"path": "department.name", "value": "Ops"}}
    dan = {"method": "insert", "params": {"path": EMPLOYEES, "value": {"name": "Dan", "salary": 1}}}
    # Each op sees the state the earlier ones left: after Dan there are 3 employees.
    assert failing([set_name, dan, {"method": "remove", "params": {"path": EMPLOYEES, "index": 9}}],
                   INDEX_OUT_OF_RANGE) == {"path": EMPLOYEES, "index": 9, "count": 3, "op": 2}
    assert failing([set_name, {"method": "set", "params": {"path": "$7.salary", "value": -1}}],
                   VALIDATION_FAILED)["op"] == 1
    assert failing([set_name, {"method": "set", "params": {"path": "department.boss", "value": 1}}],
                   UNDEFINED_KEY) == {"path": "department.boss", "op": 1}
    assert failing([{"method": "union", "params": {"path": TAGS, "values": ["t"]}},
                    {"method": "set", "params": {"path": "department.totalSalary", "value": 1}}],
                   READ_ONLY) == {"path": "department.totalSalary", "op": 1}
    assert failing([dan, {"method": "union", "params": {"path": EMPLOYEES, "values": []}}],
                   TYPE_MISMATCH)["op"] == 1
    assert failing([set_name, set_name, {"method": "setMembers", "params": {"path": TAGS, "values": [1]}}],
                   VALIDATION_FAILED)["op"] == 2
    # Ops kvod cannot even read: -32602 with the op.
    assert writer.fail("transaction", {"ops": [set_name, {"method": "get", "params": {"path": "a"}}]},
                       INVALID_PARAMS) == {"op": 1}
    assert writer.fail("transaction", {"ops": [set_name, {"method": "set", "params": {"path": "a"}}]},
                       INVALID_PARAMS) == {"op": 1}
    assert writer.fail("transaction", {"ops": [{"method": "set", "params": {"path": "a..b", "value": 1}}]},
                       INVALID_PARAMS)["op"] == 0
    writer.fail("transaction", {}, INVALID_PARAMS)
    assert writer.fail("transaction", {"ops": [set_name] * 1001}, LIMIT_EXCEEDED) == {"limit": 1000}
    watcher.assert_quiet()
    assert writer.get("") == {"value": before, "seq": 1}
    assert writer.set("department.name", "Ops") == 2  # no failure took a seq
    changes(watcher, 2)


def test_a_transaction_reports_the_first_failing_op(connect_model):
    client = connect_model()
    data = client.fail("transaction", {"ops": [
        {"method": "remove", "params": {"path": EMPLOYEES, "index": 0}},  # 1004: there are no employees
        {"method": "get", "params": {"path": "department"}},  # -32602: not a mutation
    ]}, INDEX_OUT_OF_RANGE)
    assert data == {"path": EMPLOYEES, "index": 0, "count": 0, "op": 0}
