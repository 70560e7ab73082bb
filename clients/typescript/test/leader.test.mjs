// Following a cluster's leader without a cluster: a stand-in "follower" on loopback answers `hello` and refuses every
// other request with 1012 "not the leader", naming a real kvod as the leader (or none, as during an election). The
// client moves to the named leader and sends the request again; with none named it retries for `leaderWait`, then
// rejects with NotLeader. The real thing (etcd, SIGKILL of the leader) is Tests/cluster/clients_test.py.
import assert from "node:assert/strict";
import { test } from "node:test";
import * as kvod from "../dist/index.js";
import { Kvod } from "./kvod.mjs";
import { notLeaderStandIn as standIn } from "./standin.mjs";

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
