// A resubscription kvod refuses after a reconnect: kvod restarted (same port and data directory) with a token file that
// no longer allows one subscription's path. That subscription ends with the typed error (its iterator rejects, every
// time, after what it delivered before), the other one goes on, calls work, and the client does not keep
// reconnecting. A refusal that may pass (1012 from a stand-in follower during an election that does not end) is
// retried on new connections for `leaderWait`, then ends the subscription the same way. A token kvod no longer accepts
// is said once (a warning, and the Timeout of a call waiting for the connection) while the client reconnects. `resumeRefused`, the one
// place that decides per code, is checked on its own too. And kvod restarted while the client was away and written to
// before it was back: the history on disk replays what it missed, no Resync.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import * as kvod from "../dist/index.js";
import { notLeaderStandIn, readRequests } from "./standin.mjs";
import { Kvod } from "./kvod.mjs";
import { proxy } from "./proxy.mjs";

const token = "a-token-for-the-resume-tests";

/** Runs `body` while collecting console.warn's lines. */
async function capturingWarnings(body) {
  const warnings = [];
  const warn = console.warn;
  console.warn = (...args) => { warnings.push(args.join(" ")); };
  try {
    await body(warnings);
  } finally {
    console.warn = warn;
  }
}

test("a path the token no longer allows ends that subscription only", { timeout: 60000 }, async () => {
  const folder = mkdtempSync(join(tmpdir(), "kvod-ts-tokens-"));
  const tokens = join(folder, "tokens");
  writeFileSync(tokens, `${token} read-write a,b\n`);
  const server = await new Kvod(["--token-file", tokens], { dataDir: true }).start();
  const client = await kvod.connect(server.address, { token, timeout: 20000 });
  try {
    const a = await client.subscribe("a");
    const b = await client.subscribe("b");
    await client.set("a", 1);
    await client.set("a", 2);
    await client.set("b", 1); // b's resume point is kvod's seq: b resumes after the restart without a Resync
    assert.equal((await b.next(10000)).new, 1);
    await capturingWarnings(async (warnings) => {
      writeFileSync(tokens, `${token} read-write b\n`);
      await server.restart();
      const seen = [];
      const ended = await (async () => {
        try {
          for await (const change of a) seen.push(change.new);
        } catch (error) {
          return error;
        }
      })();
      assert.deepEqual(seen, [1, 2]); // what was delivered before the restart first, then the error
      assert.ok(ended instanceof kvod.Unauthorized);
      assert.deepEqual(ended.data, { reason: "path not allowed", path: "a" });
      assert.equal(a.error, ended);
      await assert.rejects(a.next(1000), kvod.Unauthorized); // every later call ends the same way
      assert.ok(warnings.some((line) => line.includes("subscription to a cannot resume")));
    });
    await client.set("b", 2);
    assert.equal((await b.next(10000)).new, 2);
    assert.equal(b.error, undefined);
    await assert.rejects(client.get("a"), kvod.Unauthorized);
    assert.equal(client.connections, 2); // one reconnection, not a loop
    await a.unsubscribe(); // harmless on an ended subscription
    await assert.rejects(a.next(1000), kvod.Unauthorized);
    assert.equal(await client.ping(), "pong");
    assert.equal(client.connections, 2);
  } finally {
    client.close();
    await server.stop();
    rmSync(folder, { recursive: true, force: true });
  }
});

test("a token kvod no longer accepts is reported while the client reconnects", { timeout: 60000 }, async () => {
  const folder = mkdtempSync(join(tmpdir(), "kvod-ts-tokens-"));
  const tokens = join(folder, "tokens");
  writeFileSync(tokens, `${token} read-write\n`);
  const server = await new Kvod(["--token-file", tokens], { dataDir: true }).start();
  const client = await kvod.connect(server.address, { token, timeout: 2000, maxBackoff: 200 });
  try {
    const subscription = await client.subscribe("n");
    await capturingWarnings(async (warnings) => {
      writeFileSync(tokens, "another-token read-write\n");
      await server.restart();
      const deadline = Date.now() + 20000;
      while (!(client.helloError instanceof kvod.Unauthorized)) {
        assert.ok(Date.now() < deadline, "timed out");
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await assert.rejects(client.get("n"), (error) => error instanceof kvod.Timeout && /refused hello/.test(error.message));
      assert.equal(warnings.filter((line) => line.includes("refused hello")).length, 1); // once, not at each attempt
    });
    writeFileSync(tokens, `${token} read-write\n`);
    await server.restart(); // kvod accepts the token again: the client connects, resubscribes, and goes on
    await client.set("n", 1); // waits for the reconnection
    assert.equal((await subscription.next(10000)).new, 1);
    assert.equal(client.connections, 2);
    assert.equal(client.helloError, undefined);
  } finally {
    client.close();
    await server.stop();
    rmSync(folder, { recursive: true, force: true });
  }
});


test("a refusal that may pass is retried for leaderWait, then ends the subscription", { timeout: 60000 }, async () => {
  const server = await new Kvod().start();
  const cutter = await proxy(server.port);
  const standIn = await notLeaderStandIn(undefined);
  const client = await kvod.connect([cutter.address, standIn.address], { timeout: 20000, leaderWait: 1000 });
  try {
    const subscription = await client.subscribe("n");
    await capturingWarnings(async (warnings) => {
      await cutter.close(); // cuts the connection, and refuses new ones: the next is the stand-in's
      await assert.rejects(subscription.next(20000), kvod.NotLeader);
      assert.ok(warnings.some((line) => line.includes("subscription to n cannot resume")));
    });
    assert.ok(standIn.refusals >= 2); // retried on new connections (with the reconnection's backoff) ...
    const refusals = standIn.refusals;
    assert.equal(client.connections, 2); // ... then the connection to the stand-in went on without it
    // The stand-in refuses every request: retried on this connection for leaderWait, not by reconnecting.
    await assert.rejects(client.ping(), kvod.NotLeader);
    assert.equal(client.connections, 2);
    assert.ok(standIn.refusals > refusals);
  } finally {
    client.close();
    await cutter.close();
    await standIn.close();
    await server.stop();
  }
});

test("a connection that closes during its setup is followed by one reconnection, not two", { timeout: 60000 }, async () => {
  // A stand-in kvod: answers hello and subscribe, except that it closes its second connection on its subscribe.
  const sockets = [];
  const hellos = [];
  const server = createServer((socket) => {
    const number = sockets.push(socket);
    readRequests(socket, (request) => {
      if (request.method === "hello") hellos.push(number);
      if (request.method === "subscribe" && number === 2) {
        socket.destroy();
        return false;
      }
      const result = request.method === "subscribe" ? { subscription: number, seq: 0 } : request.method === "hello" ? {} : "pong";
      socket.write(JSON.stringify({ jsonrpc: "2.0", id: request.id, result }) + "\n");
    });
    socket.on("error", () => socket.destroy());
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const client = await kvod.connect(`127.0.0.1:${server.address().port}`, { timeout: 20000 });
  try {
    await client.subscribe("n");
    sockets[0].destroy();
    const deadline = Date.now() + 20000;
    while (client.connections < 2) {
      assert.ok(Date.now() < deadline, "timed out");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await new Promise((resolve) => setTimeout(resolve, 500)); // a window for a second loop's connection to show
    assert.deepEqual(hellos, [1, 2, 3]);
    assert.equal(client.connections, 2);
    assert.equal(await client.ping(), "pong");
  } finally {
    client.close();
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  }
});

test("resumeRefused decides per code", async () => {
  await capturingWarnings(async () => {
    const state = { path: "p", lastSeq: 41 };
    const resync = new kvod.ResyncRequired("cannot resume", 1010, { oldest: 50 });
    assert.equal(kvod.resumeRefused(state, resync, "h:1", 5000, 100000).action, "resync");
    assert.equal(kvod.resumeRefused({ path: "p" }, resync, "h:1", 5000, 100000).action, "end"); // no since: a fresh one
    const behind = new kvod.InvalidParams("subscribe: 'since' 41 is beyond this member's seq 40: it is behind", -32602,
      { reason: "behind", since: 41, seq: 40 });
    const named = new kvod.NotLeader("not the leader", 1012, { leader: "10.0.0.1:7070" });
    assert.equal(kvod.resumeRefused(state, behind, "h:1", 5000, 100000).action, "retry");
    assert.deepEqual(kvod.resumeRefused(state, named, "h:1", 5000, 101000), { action: "retry", leader: "10.0.0.1:7070" });
    assert.deepEqual(kvod.resumeRefused(state, named, "h:1", 5000, 102000), { action: "retry", leader: undefined });
    assert.equal(kvod.resumeRefused(state, behind, "h:1", 5000, 105000).action, "end"); // leaderWait passed
    assert.equal(kvod.resumeRefused(state, behind, "h:1", 5000, 200000).action, "retry"); // a new outage starts afresh
    for (const error of [
      new kvod.Unauthorized("path not allowed", 1008), new kvod.UndefinedKey("undefined key", 1001),
      new kvod.TypeMismatch("type mismatch", 1005), new kvod.LimitExceeded("limit exceeded", 1009),
      new kvod.InternalError("internal error", -32603), new kvod.KvodError("a code this client does not know", 4242),
      new kvod.InvalidParams("subscribe: 'since' must be a seq of at least 0", -32602),
    ]) {
      assert.equal(kvod.resumeRefused({ path: "p", lastSeq: 1 }, error, "h:1", 5000, 0).action, "end");
    }
  });
});

test("kvod restarted while the client was away: the history on disk replays what it missed", { timeout: 60000 }, async () => {
  // SIGKILL under --fsync always, writes after the restart and before the client is back: no Resync, no gap
  // (docs/DURABILITY.md#the-history-on-disk).
  const server = await new Kvod([], { dataDir: true }).start();
  const relay = await proxy(server.port);
  const watcher = await kvod.connect(relay.address, { timeout: 20000 });
  try {
    const subscription = await watcher.subscribe("counter", { options: ["new"] });
    const writer = await kvod.connect(server.address);
    for (let value = 1; value <= 3; value++) await writer.set("counter", value);
    writer.close();
    const seen = [];
    for (let i = 0; i < 3; i++) seen.push((await subscription.next(10000)).new);
    relay.refuse();
    relay.cut();
    await server.restart();
    const again = await kvod.connect(server.address);
    const seqs = [];
    for (let value = 4; value <= 6; value++) seqs.push(await again.set("counter", value));
    again.close();
    relay.accept();
    const replayed = [];
    for (let i = 0; i < 3; i++) replayed.push(await subscription.next(10000));
    assert.ok(replayed.every((item) => item.type !== "resync"), JSON.stringify(replayed));
    assert.deepEqual([...seen, ...replayed.map((change) => change.new)], [1, 2, 3, 4, 5, 6]);
    assert.deepEqual(replayed.map((change) => change.seq), seqs);
  } finally {
    watcher.close();
    await relay.close();
    await server.stop();
  }
});
