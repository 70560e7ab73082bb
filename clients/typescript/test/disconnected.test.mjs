// onDisconnected: a listener hears each end of a connection that was set up, at once, with kvod's `closing` reason
// when it sent one (SIGTERM: server_shutdown) and none after a kill -9, and whether the client reconnects by itself;
// onConnected hears the reconnection. This is what the web inspector shows as its connection state.
import assert from "node:assert/strict";
import { test } from "node:test";
import * as kvod from "../dist/index.js";
import { Kvod } from "./kvod.mjs";

/** Resolves with the next value `register(listener)` hands its listener, or rejects after `ms`. */
function next(register, ms = 15000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`nothing within ${ms} ms`)), ms);
    const remove = register((info) => { clearTimeout(timer); remove(); resolve(info); });
  });
}

test("onDisconnected hears SIGTERM and kill -9, onConnected the reconnections", { timeout: 60000 }, async () => {
  const server = await new Kvod().start();
  const client = await kvod.connect(server.address, { maxBackoff: 200 });
  try {
    let disconnected = next((listener) => client.onDisconnected(listener));
    let connected = next((listener) => client.onConnected((info) => { if (info.connections > 1) listener(info); }));
    await server.stop();
    assert.deepEqual(await disconnected, { endpoint: server.address, reason: "server_shutdown", reconnecting: true });
    await server.start();
    assert.equal((await connected).connections, 2);

    disconnected = next((listener) => client.onDisconnected(listener));
    connected = next((listener) => client.onConnected((info) => { if (info.connections > 2) listener(info); }));
    await server.kill();
    assert.deepEqual(await disconnected, { endpoint: server.address, reason: undefined, reconnecting: true });
    await server.start();
    assert.equal((await connected).connections, 3);
    assert.equal(await client.ping(), "pong");
  } finally {
    client.close();
    await server.stop();
  }
});

test("without reconnect, onDisconnected says so, and a removed listener hears nothing", { timeout: 30000 }, async () => {
  const server = await new Kvod().start();
  const client = await kvod.connect(server.address, { reconnect: false });
  try {
    const heard = [];
    const remove = client.onDisconnected((info) => heard.push(["removed", info]));
    remove();
    const disconnected = next((listener) => client.onDisconnected(listener));
    await server.kill();
    assert.equal((await disconnected).reconnecting, false);
    assert.deepEqual(heard, []);
  } finally {
    client.close();
    await server.stop();
  }
});
