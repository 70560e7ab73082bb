// The TypeScript client (dist/) against a live kvod over TCP: every method, typed errors, subscriptions with options,
// and kvod SIGKILLed and restarted mid-subscription (the iterator goes on with no gap and no duplicate).
import assert from "node:assert/strict";
import { test } from "node:test";
import * as kvod from "../dist/index.js";
import { Kvod } from "./kvod.mjs";
import { killAndRestart } from "./scenarios.mjs";

async function withServer(args, options, body) {
  const server = await new Kvod(args, options).start();
  try {
    await body(server);
  } finally {
    await server.stop();
  }
}

test("methods and collections", () => withServer([], {}, async (server) => {
  const client = await kvod.connect(server.address);
  try {
    assert.equal(await client.ping(), "pong");
    const seq = await client.set("greeting", "hello");
    assert.deepEqual(await client.getWithSeq("greeting"), { value: "hello", seq });
    await client.set("list", ["a"]);
    await client.insert("list", { values: ["b", "c"], indexes: [1, 2] });
    await client.remove("list", { index: 0 });
    await client.replace("list", { value: "z", index: 0 });
    assert.deepEqual(await client.get("list"), ["z", "c"]);
    const tseq = await client.transaction([{ method: "set", params: { path: "a", value: 1 } }, { method: "set", params: { path: "b", value: 2 } }]);
    assert.deepEqual(await client.getWithSeq("b"), { value: 2, seq: tseq });
    assert.deepEqual(await client.validate("x", { y: 1 }), { y: 1 });
    assert.ok((await client.stats()).connections >= 1);
    assert.ok((await client.observers()).connections.some((connection) => connection.self));
    assert.ok((await client.describe()).root);
  } finally {
    client.close();
  }
}));

test("errors are typed", () => withServer([], {}, async (server) => {
  const client = await kvod.connect(server.address);
  try {
    await assert.rejects(client.get("a..b"), (error) => error instanceof kvod.InvalidParams && error.code === -32602);
    await client.set("n", 5);
    await assert.rejects(client.set("n.x", 1), (error) => error instanceof kvod.TypeMismatch && error.code === 1005);
    await client.set("list", []);
    await assert.rejects(client.remove("list", { index: 3 }), kvod.IndexOutOfRange);
    await assert.rejects(client.call("nope"), kvod.MethodNotFound);
    await assert.rejects(client.call("unsubscribe", { subscription: 99999 }), kvod.UnknownSubscription);
    await assert.rejects(client.transaction([]), kvod.InvalidParams);
  } finally {
    client.close();
  }
}));

test("subscriptions carry the options", () => withServer([], {}, async (server) => {
  const client = await kvod.connect(server.address);
  try {
    await client.set("person.name", "Ada");
    const everything = await client.subscribe("person.name", { options: ["new", "old", "prior", "initial"], context: { ui: 7 } });
    const initial = await everything.next(5000);
    assert.equal(initial.initial, true);
    assert.equal(initial.new, "Ada");
    assert.deepEqual(initial.context, { ui: 7 });
    const seq = await client.set("person.name", "Grace");
    const prior = await everything.next(5000);
    const after = await everything.next(5000);
    assert.equal(prior.prior, true);
    assert.equal(prior.old, "Ada");
    assert.equal("new" in prior, false);
    assert.deepEqual([after.old, after.new, after.seq, after.kind], ["Ada", "Grace", seq, "setting"]);
    await client.set("items", ["a"]);
    const items = await client.subscribe("items", { options: ["new", "old"] });
    await client.insert("items", { value: "b" });
    const insertion = await items.next(5000);
    assert.deepEqual([insertion.kind, insertion.indexes, insertion.new], ["insertion", [1], ["b"]]);
    await items.unsubscribe();
    assert.equal(await items.next(1000), null);
    await assert.rejects(everything.next(100), kvod.Timeout);
  } finally {
    client.close();
  }
}));

test("kill and restart mid-subscription loses nothing", () => killAndRestart({ timeout: 20000 }));

test("presence: ttl and onDisconnect", () => withServer([], {}, async (server) => {
  const ada = await kvod.connect(server.address);
  const watcher = await kvod.connect(server.address);
  try {
    const subscription = await watcher.subscribe("presence.ada.online", { options: ["new"] });
    await ada.set("presence.ada.online", true, { ttl: 60 });
    assert.equal((await subscription.next(5000)).new, true);
    const meta = await watcher.getMeta("presence.ada.online");
    assert.ok(meta.expires > Date.now() + 50000 && meta.expires <= Date.now() + 61000);
    assert.equal(await ada.onDisconnect([{ method: "set", params: { path: "presence.ada.online", value: null } }]), 1);
    ada.close();
    assert.equal((await subscription.next(5000)).new, null);
    await watcher.set("short", 1, { ttl: 0.3 });
    for (let i = 0; i < 100 && (await watcher.get("short")) !== null; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(await watcher.get("short"), null);
  } finally {
    ada.close();
    watcher.close();
  }
}));

test("a bad address fails at once", async () => {
  await assert.rejects(kvod.connect("127.0.0.1:1", { timeout: 2000 }), kvod.ConnectionLost);
  assert.throws(() => new kvod.Client(["nonsense"]), TypeError);
});

test("conditional writes", () => withServer([], {}, async (server) => {
  const client = await kvod.connect(server.address);
  try {
    const seq = await client.set("stock", 3, { ifAbsent: true });
    const meta = await client.getMeta("stock");
    assert.deepEqual(meta, { value: 3, seq, modSeq: seq, expires: null });
    await client.set("stock", 2, { ifModSeq: meta.modSeq });
    await assert.rejects(client.set("stock", 1, { ifModSeq: meta.modSeq }),
      (error) => error instanceof kvod.PreconditionFailed && error.code === 1011 && error.data.value === 2);
    await client.set("stock", 1, { ifValue: 2 });
    await assert.rejects(async () => client.set("stock", 0, { ifValue: 1, ifAbsent: true }), TypeError);
    assert.equal(await client.get("stock"), 1);
  } finally {
    client.close();
  }
}));
