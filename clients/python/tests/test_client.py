"""The blocking client against a live kvod: every method, typed errors, subscriptions with each option."""

import pytest

import kvod


def test_get_set_and_collections(kvod_server):
    with kvod.Client(kvod_server.address) as client:
        assert client.ping() == "pong"
        assert client.hello()["server"] == "kvod"
        seq = client.set("greeting", "hello")
        assert client.get_with_seq("greeting") == ("hello", seq)
        assert client.set("list", [1, 2]) == seq + 1
        assert client.insert("list", 3) == seq + 2
        client.insert("list", values=["a", "b"], indexes=[0, 1])
        assert client.get("list") == ["a", "b", 1, 2, 3]
        client.remove("list", index=0)
        client.replace("list", "z", index=0)
        assert client.get("list") == ["z", 1, 2, 3]
        client.remove("list", indexes=[1, 2])
        assert client.get("list") == ["z", 3]
        seq = client.transaction([("set", {"path": "a", "value": 1}), {"method": "set", "params": {"path": "b", "value": 2}}])
        assert client.get_with_seq("b") == (2, seq)
        assert client.validate("anything", {"x": 1}) == {"x": 1}
        assert client.stats()["connections"] >= 1
        observers = client.observers()
        assert any(connection.get("self") for connection in observers["connections"])
        assert client.describe()["root"]


def test_set_collections_on_the_default_model(kvod_model):
    with kvod.Client(kvod_model.address) as client:
        client.union("department.tags", ["x", "y"])
        client.minus("department.tags", ["x"])
        assert client.get("department.tags") == ["y"]
        client.set_members("department.tags", ["p", "q"])
        client.intersect("department.tags", ["q", "r"])
        assert client.get("department.tags") == ["q"]
        assert client.describe("labColor")["class"]["name"]


@pytest.mark.parametrize("call, error", [
    (lambda c: c.get("labColor.nosuchkey"), kvod.UndefinedKey),
    (lambda c: c.get("a..b"), kvod.InvalidParams),
    (lambda c: c.set("labColor.lComponent", "not a number"), kvod.ValidationFailed),
    (lambda c: c.set("labColor.color", 1), kvod.ReadOnlyKey),
    (lambda c: c.remove("department.employees", index=99), kvod.IndexOutOfRange),
    (lambda c: c.insert("department.tags", "x", index=0), kvod.TypeMismatch),
    (lambda c: c.call("nope"), kvod.MethodNotFound),
    (lambda c: c.call("unsubscribe", {"subscription": 424242}), kvod.UnknownSubscription),
    (lambda c: c.transaction([]), kvod.InvalidParams),
])
def test_errors_are_typed(kvod_model, call, error):
    with kvod.Client(kvod_model.address) as client:
        with pytest.raises(error) as raised:
            call(client)
        assert raised.value.code == error.code
        assert isinstance(raised.value, kvod.KvodError)
        assert raised.value.message


def test_a_failed_transaction_names_the_op(kvod_model):
    with kvod.Client(kvod_model.address) as client:
        with pytest.raises(kvod.ValidationFailed) as raised:
            client.transaction([("set", {"path": "note", "value": "x"}),
                                ("set", {"path": "labColor.lComponent", "value": "nope"})])
        assert raised.value.data["op"] == 1


def test_subscriptions_carry_the_options(kvod_server):
    with kvod.Client(kvod_server.address) as client:
        client.set("person.name", "Ada")
        everything = client.subscribe("person.name", ["new", "old", "prior", "initial"], context={"ui": 7})
        bare = client.subscribe("person.name", [])
        initial = everything.next(timeout=5)
        assert initial.initial and initial.new == "Ada" and not initial.has_old and initial.context == {"ui": 7}
        seq = client.set("person.name", "Grace")
        prior, after = everything.next(timeout=5), everything.next(timeout=5)
        assert prior.prior and prior.old == "Ada" and not prior.has_new and prior.seq == seq
        assert not after.prior and (after.old, after.new, after.seq, after.kind) == ("Ada", "Grace", seq, "setting")
        plain = bare.next(timeout=5)
        assert (plain.kind, plain.seq, plain.has_new, plain.has_old) == ("setting", seq, False, False)
        assert everything.last_seq == seq


def test_collection_changes_have_kinds_and_indexes(kvod_server):
    with kvod.Client(kvod_server.address) as client:
        client.set("items", ["a"])
        subscription = client.subscribe("items", ["new", "old"])
        client.insert("items", values=["b", "c"], indexes=[1, 2])
        change = subscription.next(timeout=5)
        assert (change.kind, change.indexes, change.new) == ("insertion", [1, 2], ["b", "c"])
        client.remove("items", index=0)
        change = subscription.next(timeout=5)
        assert (change.kind, change.indexes, change.old) == ("removal", [0], ["a"])


def test_unsubscribe_ends_the_iterator_and_timeouts_are_typed(kvod_server):
    with kvod.Client(kvod_server.address, timeout=5) as client:
        subscription = client.subscribe("quiet", ["new"])
        with pytest.raises(kvod.Timeout):
            subscription.next(timeout=0.2)
        subscription.unsubscribe()
        client.set("quiet", 1)
        assert list(subscription) == []
        assert client.observers("quiet")["connections"] == []


def test_a_wrong_address_fails_at_once():
    with pytest.raises(kvod.ConnectionLost):
        kvod.Client("127.0.0.1:1", timeout=2)
    with pytest.raises(ValueError):
        kvod.Client("nonsense")


def test_conditional_writes(kvod_server):
    with kvod.Client(kvod_server.address) as client:
        seq = client.set("stock", 3, if_absent=True)
        meta = client.get_meta("stock")
        assert meta == {"value": 3, "seq": seq, "modSeq": seq, "expires": None}  # no ttl
        client.set("stock", 2, if_mod_seq=meta["modSeq"])
        with pytest.raises(kvod.PreconditionFailed) as raised:
            client.set("stock", 1, if_mod_seq=meta["modSeq"])  # someone else changed it since
        assert raised.value.code == 1011 and raised.value.data["value"] == 2
        client.set("stock", 1, if_value=2)
        with pytest.raises(ValueError):
            client.set("stock", 0, if_value=1, if_absent=True)
        assert client.get("stock") == 1
