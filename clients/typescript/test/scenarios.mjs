// Scenarios the test files run over each transport.
import assert from "node:assert/strict";
import * as kvod from "../dist/index.js";
import { Kvod } from "./kvod.mjs";

/** kvod SIGKILLed and restarted (with a data directory) mid-subscription: the watcher (connected with
 * `watcherOptions`) sees every value exactly once, in order, across the restart. */
export async function killAndRestart(watcherOptions) {
  const server = await new Kvod([], { dataDir: true }).start();
  const watcher = await kvod.connect(server.address, watcherOptions);
  const writer = await kvod.connect(server.address, { timeout: 20000 });
  try {
    const subscription = await watcher.subscribe("counter", { options: ["new"] });
    const seen = [];
    for (let value = 1; value <= 5; value++) await writer.set("counter", value);
    for (let i = 0; i < 5; i++) seen.push((await subscription.next(10000)).new);
    await server.restart();
    // The history is on disk (resume.test.mjs returns after writes made while away). The writer waits for its own
    // reconnection too: a request sent before it noticed the drop fails with ConnectionLost.
    for (let i = 0; i < 1000 && (watcher.connections < 2 || writer.connections < 2); i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    for (let value = 6; value <= 10; value++) await writer.set("counter", value);
    for await (const change of subscription) {
      seen.push(change.new);
      if (seen.length === 10) break;
    }
    assert.deepEqual(seen, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    assert.equal(watcher.connections, 2);
  } finally {
    watcher.close();
    writer.close();
    await server.stop();
  }
}
