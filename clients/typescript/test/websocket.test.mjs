// The TypeScript client (dist/) against a live kvod over WebSocket, the transport browsers use (Node 20 provides the
// standard WebSocket with --experimental-websocket, which test.sh sets): methods, ordering of a subscription's
// notifications, typed errors, and kvod SIGKILLed and restarted mid-subscription (no gap, no duplicate).
import assert from "node:assert/strict";
import { test } from "node:test";
import * as kvod from "../dist/index.js";
import { Kvod } from "./kvod.mjs";
import { killAndRestart } from "./scenarios.mjs";

assert.equal(typeof globalThis.WebSocket, "function", "this Node has no WebSocket: run with --experimental-websocket");

async function withServer(args, options, body) {
  const server = await new Kvod(args, options).start();
  try {
    await body(server);
  } finally {
    await server.stop();
  }
}

const overWebSocket = { transport: "websocket", timeout: 20000 };

test("methods, subscriptions and errors over WebSocket", () => withServer([], {}, async (server) => {
  const client = await kvod.connect(server.address, overWebSocket);
  const tcp = await kvod.connect(server.address);
  try {
    assert.equal(await client.ping(), "pong");
    const subscription = await client.subscribe("ws.greeting", { options: ["new", "old"] });
    const seq = await tcp.set("ws.greeting", "hello");
    const change = await subscription.next(5000);
    assert.deepEqual([change.kind, change.old, change.new, change.seq], ["setting", null, "hello", seq]);
    await client.set("ws.list", ["a"]);
    await client.insert("ws.list", { values: ["b"], indexes: [1] });
    assert.deepEqual(await tcp.get("ws.list"), ["a", "b"]);
    await assert.rejects(client.get("ws.list.@nonsense"), kvod.KvodError);
    assert.ok((await client.observers()).connections.some((connection) => connection.self));
  } finally {
    client.close();
    tcp.close();
  }
}));

test("kill and restart mid-subscription loses nothing over WebSocket", () => killAndRestart(overWebSocket));
