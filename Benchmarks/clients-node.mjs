// The Node side of Benchmarks/clients.py: the TypeScript client (clients/typescript/dist) measured the way the Python
// workers are. Run by clients.py, one measurement per process:
//   node --experimental-websocket clients-node.mjs rtt|notify ADDRESS tcp|websocket SECONDS COUNT RTT_KEY NOTIFY_KEY
// rtt: sequential `set`s for SECONDS after a 0.3 s warm-up; notify: subscribes, prints "ready", then times the first
// to the COUNT-th notification, checking that the seqs follow one another. The last line printed is the result, with
// the process's CPU time (user + system) per round trip or notification in µs.
import * as kvod from "../clients/typescript/dist/index.js";

const [mode, address, transport, secondsText, countText, roundTripKey, notifyKey] = process.argv.slice(2);
const seconds = Number(secondsText);
const count = Number(countText);

/** CPU time (user + system) used since `start` (a `process.cpuUsage()` reading), in µs. */
function cpuMicroseconds(start) {
  const used = process.cpuUsage(start);
  return used.user + used.system;
}

const client = await kvod.connect(address, { transport, reconnect: false });
try {
  if (mode === "rtt") {
    const warmupEnd = performance.now() + 300;
    let value = 0;
    while (performance.now() < warmupEnd) await client.set(roundTripKey, value++);
    const start = performance.now();
    const cpuStart = process.cpuUsage();
    let done = 0;
    while (performance.now() - start < seconds * 1000) await client.set(roundTripKey, done++);
    const rate = done / ((performance.now() - start) / 1000);
    console.log(JSON.stringify({ rate, cpu_us: cpuMicroseconds(cpuStart) / done }));
  } else {
    const subscription = await client.subscribe(notifyKey, { options: ["new"] });
    console.log("ready");
    let received = 0;
    let nextSeq = null;
    let first = 0;
    let last = 0;
    let cpuFirst = null;
    for await (const item of subscription) {
      if (item.type === "resync") throw new Error(`unexpected resync at seq ${item.seq}`);
      if (nextSeq !== null && item.seq !== nextSeq) throw new Error(`seq ${item.seq}, expected ${nextSeq}`);
      nextSeq = item.seq + 1;
      received += 1;
      last = performance.now();
      if (received === 1) {
        first = last;
        cpuFirst = process.cpuUsage();
      }
      if (received === count) break;
    }
    const cpu = cpuMicroseconds(cpuFirst) / (received - 1);
    console.log(JSON.stringify({ rate: (received - 1) / ((last - first) / 1000), cpu_us: cpu, received }));
  }
} finally {
  client.close();
}
