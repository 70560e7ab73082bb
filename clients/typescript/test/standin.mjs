// A stand-in cluster follower on loopback for the clients' leader-following tests: it answers `hello` (role
// follower) and refuses every other request with 1012 "not the leader", naming `leader` (or none, as during an
// election). `refusals` counts the refusals; `close()` stops it.
import { createServer } from "node:net";

/** Starts the stand-in; resolves to { address, refusals, close }. */
export async function notLeaderStandIn(leader) {
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
