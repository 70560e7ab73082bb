// Queries with the TypeScript client against a real kvod (Protocol/methods.md#queries): the one-shot `query`, and a
// model-checked live query test: random mutations (sets of sort and filter keys and of keys nobody reads, inserts,
// removals, replacements, transactions, the whole collection replaced, set mutations) with several live queries of
// random orderBy, offset, limit and select; after every mutation each LiveQuery's window and count, built only from
// the notifications, equal the brute-force answer (`get` with the same query), and so does a window rebuilt from the
// change listeners alone. Also: a reconnection (the window comes again), closing, errors, the mirror alone.
// The predicates are the simple `KEY OP VALUE` ones and TRUEPREDICATE, which the full predicate language keeps.
// KVOD_QUERY_STEPS sets the number of mutations (default 150), KVOD_QUERY_SEED the seed.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import * as kvod from "../dist/index.js";
import { Kvod } from "./kvod.mjs";
import { proxy as startProxy } from "./proxy.mjs";

const STEPS = Number(process.env.KVOD_QUERY_STEPS ?? 150);
const SEED = Number(process.env.KVOD_QUERY_SEED ?? Math.floor(Math.random() * 2 ** 30));
const NAMES = ["ada", "bob", "cy", "di", "eve", "fay", "gus"];
// An open root with an array of open objects and a set of ints (a set must be declared).
const MODEL = { root: "Root", classes: { Root: { open: true, properties: {
  players: { type: "[Object]", default: [] }, nums: { type: "set<int>", default: [] } } } } };

/** A small seeded generator (mulberry32), so a failure names a seed that reproduces it. */
function generator(seed) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const below = (n) => Math.floor(next() * n);
  const choice = (list) => list[below(list.length)];
  const sample = (list, k) => {
    const copy = [...list];
    const out = [];
    while (out.length < k && copy.length) out.push(copy.splice(below(copy.length), 1)[0]);
    return out;
  };
  return { next, below, choice, sample };
}

async function withServer(body) {
  const folder = mkdtempSync(join(tmpdir(), "kvod-ts-query-"));
  const model = join(folder, "model.json");
  writeFileSync(model, JSON.stringify(MODEL));
  const server = await new Kvod(["--model", model, "--no-empty"]).start();
  try {
    await body(server);
  } finally {
    await server.stop();
    rmSync(folder, { recursive: true, force: true });
  }
}

function randomQuery(rng) {
  if (rng.next() < 0.25) {
    return ["nums", {
      where: rng.choice(["TRUEPREDICATE", `SELF > ${rng.below(20)}`, `SELF < ${rng.below(20)}`]),
      orderBy: rng.choice([undefined, "self", "-self"]), offset: rng.choice([undefined, 0, 1, 3]),
      limit: rng.choice([undefined, 1, 2, 4]),
    }];
  }
  const keys = rng.sample(["score", "-score", "team", "-team", "name", "-name"], rng.below(3));
  const orderBy = keys.map((key) => (rng.next() < 0.7 ? key
    : { key: key.replace(/^-/, ""), ascending: !key.startsWith("-") }));
  return ["players", {
    where: rng.choice(["TRUEPREDICATE", `team == ${rng.below(3)}`, `team != ${rng.below(3)}`, `score > ${rng.below(10)}`,
      `score < ${rng.below(10)}`, `name == ${rng.choice(NAMES)}`, undefined]),
    orderBy: orderBy.length ? orderBy : undefined, offset: rng.choice([undefined, 0, 1, 2, 5]),
    limit: rng.choice([undefined, 1, 3, 5, 20]),
    select: rng.choice([undefined, ["name"], ["score", "team"], ["name", "score", "team"]]),
  }];
}

const player = (rng) => ({ name: rng.choice(NAMES), score: rng.below(10), team: rng.below(3), other: rng.below(100) });

function randomOp(rng, players, nums) {
  const n = players.length;
  const choice = rng.next();
  if (n && choice < 0.45) {
    const target = rng.choice(players).$id;
    const key = rng.choice(["score", "score", "team", "name", "other"]);
    const value = { score: rng.below(10), team: rng.below(3), name: rng.choice(NAMES), other: rng.below(100) }[key];
    return ["set", { path: `$${target}.${key}`, value }];
  }
  if (choice < 0.6 || n === 0) {
    if (n && rng.next() < 0.5) return ["insert", { path: "players", value: player(rng), index: rng.below(n + 1) }];
    return ["insert", { path: "players", values: Array.from({ length: 1 + rng.below(2) }, () => player(rng)) }];
  }
  if (choice < 0.72) {
    const indexes = rng.sample([...Array(n).keys()], Math.min(n, 1 + rng.below(2))).sort((a, b) => a - b);
    return ["remove", { path: "players", indexes }];
  }
  if (choice < 0.8) return ["replace", { path: "players", value: player(rng), index: rng.below(n) }];
  if (choice < 0.82) return ["set", { path: "players", value: Array.from({ length: rng.below(6) }, () => player(rng)) }];
  const values = Array.from({ length: 1 + rng.below(3) }, () => rng.below(20));
  const method = rng.choice(["union", "union", "minus", "intersect", "setMembers"]);
  if (method === "intersect") values.push(...rng.sample(nums, 3));
  return [method, { path: "nums", values }];
}

function randomMutation(rng, players, nums) {
  if (rng.next() < 0.15) {
    const ops = [];
    for (let k = 2 + rng.below(2); k > 0; k--) {
      const [method, params] = randomOp(rng, players, nums);
      // Indexes would refer to the state the earlier ops left: keep the ops of a transaction independent.
      if (method === "remove" || method === "replace" || (method === "set" && params.path === "players")) continue;
      ops.push({ method, params });
    }
    if (ops.length) return ["transaction", { ops }];
  }
  return randomOp(rng, players, nums);
}

/** A window rebuilt from the QueryChange events alone. */
function applyEvent(rows, event) {
  if (event.kind === "setting") return [...event.new];
  const next = [...rows];
  if (event.kind === "insertion") {
    event.indexes.map((index, k) => [index, event.new[k]]).sort((a, b) => a[0] - b[0])
      .forEach(([index, row]) => next.splice(index, 0, row));
  } else if (event.kind === "removal") {
    [...event.indexes].sort((a, b) => b - a).forEach((index) => next.splice(index, 1));
  } else {
    event.indexes.forEach((index, k) => { next[index] = event.new[k]; });
  }
  return next;
}

test("the mirror alone, and queryParams", () => {
  assert.deepEqual(kvod.queryParams({ where: "a > 1", orderBy: "-a", offset: 0, limit: 2, select: "a" }),
    { where: "a > 1", orderBy: ["-a"], offset: 0, limit: 2, select: ["a"] });
  assert.deepEqual(kvod.queryParams({}), {});
  const mirror = new kvod.QueryMirror();
  const change = (kind, indexes, rows, count = 0, extra = {}) => ({
    type: "change", path: "p", kind, seq: 1, prior: false, initial: false, count, indexes, new: rows, ...extra,
  });
  mirror.apply(change("setting", undefined, ["a", "b", "c"], 3));
  assert.deepEqual(mirror.apply(change("removal", [0, 2], undefined, 1)).old, ["a", "c"]);
  assert.deepEqual([mirror.rows, mirror.count], [["b"], 1]);
  mirror.apply(change("insertion", [0, 2], ["x", "y"], 3));
  assert.deepEqual(mirror.rows, ["x", "b", "y"]);
  assert.deepEqual(mirror.apply(change("replacement", [1], ["B"], 3)).old, ["b"]);
  assert.equal(mirror.apply(change("removal", [0], undefined, 3, { prior: true })), undefined);
  assert.deepEqual(mirror.apply(change("replacement", [], [], 7)).indexes, []);
  assert.deepEqual([mirror.rows, mirror.count], [["x", "B", "y"], 7]);
  for (const bad of [change("removal", [3]), change("insertion", [5], ["z"]), change("insertion", [0]),
    change("replacement", [0], ["a", "b"]), change("removal")]) {
    assert.throws(() => mirror.apply(bad), kvod.MirrorError);
  }
});

test("a one-shot query and its errors", () => withServer(async (server) => {
  const client = await kvod.connect(server.address);
  try {
    await client.insert("players", { values: [["ada", 5, 0], ["bob", 9, 1], ["cy", 1, 0], ["di", 7, 1]]
      .map(([name, score, team]) => ({ name, score, team })) });
    const result = await client.query("players", { where: "score > 2", orderBy: "-score", limit: 2, select: ["name", "score"] });
    assert.deepEqual(result, { rows: [{ $id: 2, name: "bob", score: 9 }, { $id: 4, name: "di", score: 7 }], count: 3, seq: 1 });
    await assert.rejects(client.query("players", { where: "score >" }),
      (error) => error instanceof kvod.InvalidQuery && error.code === 1013 && "column" in error.data);
    await assert.rejects(client.query("players", { offset: -1 }), kvod.InvalidParams);
    await client.set("name", "x");
    await assert.rejects(client.query("name"), kvod.TypeMismatch);
    await assert.rejects(client.liveQuery("name"), kvod.TypeMismatch);
  } finally {
    client.close();
  }
}));

test("live queries follow random mutations", () => withServer(async (server) => {
  const rng = generator(SEED);
  const client = await kvod.connect(server.address);
  try {
    await client.insert("players", { values: Array.from({ length: 8 }, () => player(rng)) });
    await client.union("nums", Array.from({ length: 6 }, () => rng.below(20)));
    const lives = [];
    for (let k = 0; k < 8; k++) {
      const [path, query] = randomQuery(rng);
      const live = await client.liveQuery(path, query);
      const rebuilt = { rows: [] };
      live.onChange((event) => { rebuilt.rows = applyEvent(rebuilt.rows, event); });
      lives.push({ path, query, live, rebuilt });
    }
    for (let step = 1; step <= STEPS; step++) {
      const players = (await client.get("players")) ?? [];
      const nums = (await client.get("nums")) ?? [];
      const [method, params] = randomMutation(rng, players, nums);
      await client.call(method, params);
      for (const { path, query, live } of lives) {
        const expected = await client.query(path, query);
        const context = `seed ${SEED} step ${step}: ${path} ${JSON.stringify(query)} after ${method} ${JSON.stringify(params)}`;
        assert.equal(live.error, undefined, context);
        assert.deepEqual([live.rows, live.count], [expected.rows, expected.count], context);
        assert.deepEqual([...live], expected.rows, context);
        assert.equal(live.length, expected.rows.length, context);
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
    for (const { live, rebuilt } of lives) {
      assert.deepEqual(rebuilt.rows, live.rows);
      await live.close();
      assert.ok(live.closed);
    }
    const [self] = (await client.observers()).connections.filter((connection) => connection.self);
    assert.deepEqual(self.subscriptions, []);
  } finally {
    client.close();
  }
}));

test("a live query comes back after a reconnection", () => withServer(async (server) => {
  const proxy = await startProxy(server.port);
  const watcher = await kvod.connect(proxy.address, { timeout: 20000 });
  const writer = await kvod.connect(server.address);
  try {
    await writer.insert("players", { values: [{ name: "ada", score: 5 }, { name: "bob", score: 9 }, { name: "cy", score: 1 }] });
    const live = await watcher.liveQuery("players", { orderBy: "-score", limit: 2, select: ["name"] });
    const events = [];
    live.onChange((event) => { events.push(event); });
    const names = () => live.rows.map((row) => row.name);
    assert.deepEqual(names(), ["bob", "ada"]);
    proxy.cut();
    await writer.set("$3.score", 50); // missed while the connection is down
    await writer.insert("players", { value: { name: "di", score: 7 } });
    // The client resubscribes with `since`: kvod replays what the window missed, as ordinary changes.
    await live.waitFor((q) => JSON.stringify(names()) === '["cy","bob"]' && q.count === 4, 20000);
    await writer.set("$2.score", 100);
    await live.waitFor(() => JSON.stringify(names()) === '["bob","cy"]');
    assert.ok(watcher.connections >= 2);
    assert.ok(events[0].initial && !events.slice(1).some((event) => event.initial));
    await live.close();
    await writer.set("$1.score", 1000);
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.deepEqual(names(), ["bob", "cy"]); // closed: it stays as it was
  } finally {
    watcher.close();
    writer.close();
    await proxy.close();
  }
}));
