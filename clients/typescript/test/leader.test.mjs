// Following a cluster's leader without a cluster: a stand-in "follower" on loopback answers `hello` and refuses every
// other request with 1012 "not the leader", naming a real kvod as the leader (or none, as during an election). The
// client moves to the named leader and sends the request again; with none named it retries for `leaderWait`, then
// rejects with NotLeader. The real thing (etcd, SIGKILL of the leader) is Tests/cluster/clients_test.py.
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { test } from "node:test";
import * as kvod from "../dist/index.js";
import { Kvod } from "./kvod.mjs";

async function standIn(leader) {
  const state = { refusals: 0 };
  const server = createServer((socket) => {
    socket.setEncoding("utf8");
    let buffered = "";
    socket.on("data", (chunk) => {
      buffered += chunk;
      let newline;
      while ((newline = buffered.indexOf("\n")) >= 0) {
        const request = JSON.parse(buffered.slice(0, newline));
        buffered = buffered.slice(newline + 1);
        let answer;
        if (request.method === "hello") {
          answer = { jsonrpc: "2.0", id: request.id, result: { server: "kvod", role: "follower" } };
        } else {
          state.refusals += 1;
          const data = { reason: leader ? "follower" : "election", term: 7, ...(leader ? { leader } : {}) };
          answer = { jsonrpc: "2.0", id: request.id, error: { code: 1012, message: "not the leader", data } };
        }
        socket.write(JSON.stringify(answer) + "\n");
      }
    });
    socket.on("error", () => socket.destroy());
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.address = `127.0.0.1:${server.address().port}`;
  state.close = () => new Promise((resolve) => { server.close(resolve); server.unref(); });
  return state;
}

test("a mutation refused by a follower goes to the leader it names", async () => {
  const server = await new Kvod().start();
  const follower = await standIn(server.address);
  try {
    const client = await kvod.connect([follower.address, "127.0.0.1:1"]);
    try {
      const seq = await client.set("x", 1);
      assert.equal(follower.refusals, 1);
      assert.equal(client.endpoint, server.address);
      const subscription = await client.subscribe("x", { options: ["new"] });
      assert.equal(await client.set("x", 2), seq + 1);
      assert.equal((await subscription.next(10_000)).new, 2);
      assert.equal(client.connections, 2);
    } finally {
      client.close();
    }
  } finally {
    await follower.close();
    await server.stop();
  }
});

test("without a leader it retries for leaderWait, then rejects with NotLeader", async () => {
  const follower = await standIn(undefined);
  try {
    const client = await kvod.connect(follower.address, { leaderWait: 600 });
    try {
      const started = Date.now();
      await assert.rejects(client.set("x", 1), (error) => error instanceof kvod.NotLeader && error.code === 1012
        && error.data.reason === "election");
      assert.ok(Date.now() - started >= 600);
      assert.ok(follower.refusals >= 3 && follower.refusals <= 10, `${follower.refusals} tries`);
      assert.equal(client.connections, 1);
    } finally {
      client.close();
    }
  } finally {
    await follower.close();
  }
});

test("connectionOrder: the preferred leader, then the addresses after the one lost", () => {
  assert.deepEqual(kvod.connectionOrder(["a", "b", "c"], undefined, undefined), ["a", "b", "c"]);
  assert.deepEqual(kvod.connectionOrder(["a", "b", "c"], undefined, "b"), ["c", "a", "b"]);
  assert.deepEqual(kvod.connectionOrder(["a", "b", "c"], "c", "a"), ["c", "b", "a"]);
  assert.deepEqual(kvod.connectionOrder(["a", "b"], "leader:1", undefined), ["leader:1", "a", "b"]);
  assert.throws(() => new kvod.Client([]), TypeError);
  assert.throws(() => new kvod.Client(["127.0.0.1:7070", "no-port"]), TypeError);
});
