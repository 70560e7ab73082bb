// Stand-in servers on loopback for the client tests. `readRequests` reads a socket's request lines; the stand-in
// cluster follower answers `hello` (role follower) and refuses every other request with 1012 "not the leader",
// naming `leader` (or none, as during an election). `refusals` counts the refusals; `close()` stops it.
import { createServer } from "node:net";

/** Calls `onRequest(request)` for each JSON line `socket` receives, in order; a return of `false` stops reading. */
export function readRequests(socket, onRequest) {
  socket.setEncoding("utf8");
  let buffered = "";
  socket.on("data", (chunk) => {
    buffered += chunk;
    let newline;
    while ((newline = buffered.indexOf("\n")) >= 0) {
      const request = JSON.parse(buffered.slice(0, newline));
      buffered = buffered.slice(newline + 1);
      if (onRequest(request) === false) return;
    }
  });
}

/** Starts the stand-in; resolves to { address, refusals, close }. */
export async function notLeaderStandIn(leader) {
  const state = { refusals: 0 };
  const server = createServer((socket) => {
    readRequests(socket, (request) => {
      let answer;
      if (request.method === "hello") {
        answer = { jsonrpc: "2.0", id: request.id, result: { server: "kvod", role: "follower" } };
      } else {
        state.refusals += 1;
        const data = { reason: leader ? "follower" : "election", term: 7, ...(leader ? { leader } : {}) };
        answer = { jsonrpc: "2.0", id: request.id, error: { code: 1012, message: "not the leader", data } };
      }
      socket.write(JSON.stringify(answer) + "\n");
    });
    socket.on("error", () => socket.destroy());
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.address = `127.0.0.1:${server.address().port}`;
  state.close = () => new Promise((resolve) => { server.close(resolve); server.unref(); });
  return state;
}
