// A TCP proxy on 127.0.0.1 to a kvod: `cut()` closes every forwarded connection (kvod and the client each see theirs
// end), so a client reconnects while kvod lives on.
import { connect, createServer } from "node:net";

export async function proxy(targetPort) {
  const sockets = new Set();
  const server = createServer((client) => {
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
    close() { this.cut(); return new Promise((resolve) => server.close(resolve)); },
  };
}
