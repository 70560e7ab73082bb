// Presence across reconnections against a real kvod, the client's connection going through a proxy that cuts it
// (over TCP and over WebSocket): the onDisconnect ops are registered again on every new connection (each end of a
// connection runs them: one more entry in `log`), a cancel sticks across reconnections, and onConnected listeners run
// on each connection and may call the client (Firebase's `.info/connected` pattern). A stand-in follower refuses the
// re-registration with 1012: the client moves to the leader it names, or, with none named for `leaderWait`, goes on
// without it and says so. A recording stand-in checks the order on a new connection.
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { test } from "node:test";
import * as kvod from "../dist/index.js";
import { notLeaderStandIn as standIn, readRequests } from "./standin.mjs";
import { Kvod } from "./kvod.mjs";
import { proxy } from "./proxy.mjs";

const gone = [
  { method: "insert", params: { path: "log", value: "gone" } },
  { method: "set", params: { path: "presence.alice", value: "offline" } },
];

async function until(condition, ms = 20000) {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    assert.ok(Date.now() < deadline, "timed out");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}


async function withKvod(body) {
  const server = await new Kvod().start();
  const cutter = await proxy(server.port);
  const writer = await kvod.connect(server.address);
  try {
    await writer.set("log", []);
    await body(cutter, writer);
  } finally {
    writer.close();
    await cutter.close();
    await server.stop();
  }
}

for (const transport of ["tcp", "websocket"]) test(`onDisconnect is registered again on every connection; cancel sticks (${transport})`, () => withKvod(async (cutter, writer) => {
  const alice = await kvod.connect(cutter.address, { timeout: 20000, transport });
  try {
    const seen = [];
    const remove = alice.onConnected(async (info) => {
      seen.push(info);
      await alice.set("presence.alice", "online"); // a listener may call the client
    });
    await until(async () => seen.length === 1 && (await writer.get("presence.alice")) === "online");
    assert.equal(await alice.onDisconnect(gone), 2);
    for (const cut of [1, 2]) {
      cutter.cut();
      await until(() => seen.length === cut + 1); // after the ops were registered on the new connection
      assert.deepEqual(await writer.get("log"), Array(cut).fill("gone"));
    }
    await until(async () => (await writer.get("presence.alice")) === "online");
    assert.deepEqual(seen.map((info) => info.connections), [1, 2, 3]);
    assert.ok(seen.every((info) => info.onDisconnectError === undefined && info.endpoint === cutter.address));
    assert.equal(seen[0].server.server, "kvod");

    await alice.cancelOnDisconnect();
    for (const cut of [3, 4]) { // the cancel holds on the next connection too
      cutter.cut();
      await until(() => seen.length === cut + 1);
    }
    remove();
    await alice.onDisconnect([{ method: "insert", params: { path: "log", value: "last" } }]);
    cutter.cut();
    await until(async () => (await writer.get("log")).at(-1) === "last");
    assert.deepEqual(await writer.get("log"), ["gone", "gone", "last"]); // the cancelled connections ran nothing
    await until(() => alice.connections === 6);
    await alice.ping();
    assert.equal(seen.length, 5); // removed: not called for the sixth
    assert.equal(alice.onDisconnectError, undefined);
  } finally {
    alice.close();
  }
}));

test("a refused registration moves to the leader it names", () => withKvod(async (cutter, writer) => {
  const follower = await standIn(cutter.address); // names kvod (through the proxy) as the leader
  const alice = await kvod.connect([cutter.address, follower.address], { timeout: 20000 });
  try {
    await alice.onDisconnect(gone);
    cutter.cut(); // the next address is tried first: the stand-in, which refuses onDisconnect
    await until(() => alice.connections === 2);
    assert.equal(follower.refusals, 1);
    assert.equal(alice.endpoint, cutter.address);
    assert.equal(alice.onDisconnectError, undefined);
    cutter.cut();
    await until(async () => (await writer.get("log")).length === 2);
  } finally {
    alice.close();
    await follower.close();
  }
}));

test("without a leader the connection goes on without the ops, and says so", () => withKvod(async (cutter) => {
  const follower = await standIn(undefined);
  const alice = await kvod.connect([cutter.address, follower.address], { timeout: 20000, leaderWait: 500 });
  const warn = console.warn;
  const warnings = [];
  console.warn = (message) => warnings.push(String(message));
  try {
    const seen = [];
    alice.onConnected((info) => { seen.push(info); });
    await alice.onDisconnect(gone);
    await until(() => seen.length === 1);
    cutter.close(); // and refuses from now on: the stand-in is next
    await until(() => seen.length === 2);
    assert.equal(seen[1].endpoint, follower.address);
    assert.ok(seen[1].onDisconnectError instanceof kvod.NotLeader);
    assert.equal(alice.onDisconnectError, seen[1].onDisconnectError);
    assert.ok(follower.refusals >= 3, `${follower.refusals} tries`); // pauses of 100, 200, 400 ms
    assert.ok(warnings.some((warning) => warning.includes("onDisconnect ops could not be registered again")));
  } finally {
    console.warn = warn;
    alice.close();
    await follower.close();
  }
}));

/** A stand-in kvod that records each connection's methods and answers them; `drop()` closes the connections; while
 * `hold` is set, hello is answered only when `release()` is called (a window for callers to queue). */
async function recorder() {
  const state = { connections: [], sockets: [], held: [], hold: false };
  const results = { hello: { server: "kvod" }, subscribe: { subscription: 1, seq: 0 }, set: { seq: 1 } };
  const server = createServer((socket) => {
    const methods = [];
    state.connections.push(methods);
    state.sockets.push(socket);
    readRequests(socket, (request) => {
      methods.push(request.method);
      const result = results[request.method] ?? { ops: (request.params?.ops ?? []).length };
      const answer = () => socket.write(JSON.stringify({ jsonrpc: "2.0", id: request.id, result }) + "\n");
      if (request.method === "hello" && state.hold) state.held.push(answer);
      else answer();
    });
    socket.on("error", () => socket.destroy());
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.address = `127.0.0.1:${server.address().port}`;
  state.drop = () => { for (const socket of state.sockets) socket.destroy(); };
  state.release = () => { state.hold = false; for (const answer of state.held.splice(0)) answer(); };
  state.close = () => new Promise((resolve) => { state.drop(); server.close(resolve); });
  return state;
}

test("on a new connection: hello, the onDisconnect ops, the subscriptions, then the waiting calls", async () => {
  const stand = await recorder();
  const client = await kvod.connect(stand.address, { timeout: 20000 });
  try {
    await client.subscribe("x");
    await client.onDisconnect(gone);
    stand.hold = true;
    stand.drop();
    await until(() => stand.connections.length === 2 && stand.held.length === 1); // hello waits
    const call = client.set("y", 1); // waits for the connection to be set up
    stand.release();
    assert.equal(await call, 1);
    assert.deepEqual(stand.connections[1], ["hello", "onDisconnect", "subscribe", "set"]);
  } finally {
    client.close();
    await stand.close();
  }
});
