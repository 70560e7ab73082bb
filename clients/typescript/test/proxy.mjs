// A TCP proxy on 127.0.0.1 to a kvod: `cut()` closes every forwarded connection (kvod and the client each see theirs
// end), so a client reconnects while kvod lives on; `refuse()` closes new connections at once until `accept()`.
import { connect, createServer } from "node:net";

export async function proxy(targetPort) {
  const sockets = new Set();
  let refusing = false;
  const server = createServer((client) => {
    if (refusing) {
      client.destroy();
      return;
    }
    const upstream = connect(targetPort, "127.0.0.1");
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("error", () => {});
      socket.on("close", () => { sockets.delete(socket); client.destroy(); upstream.destroy(); });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    address: `127.0.0.1:${server.address().port}`,
    cut() { for (const socket of sockets) socket.destroy(); },
    refuse() { refusing = true; },
    accept() { refusing = false; },
    close() { this.cut(); return new Promise((resolve) => server.close(resolve)); },
  };
}
