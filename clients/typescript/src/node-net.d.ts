// The few declarations of Node's `node:net` and `node:tls` this package uses (there is no @types/node here: no npm
// registry).
declare module "node:net" {
  export interface Socket {
    setEncoding(encoding: "utf8"): this;
    setNoDelay(noDelay?: boolean): this;
    write(data: string): boolean;
    end(): void;
    destroy(): void;
    on(event: "data", listener: (chunk: string) => void): this;
    on(event: "connect" | "close" | "end", listener: () => void): this;
    on(event: "error", listener: (error: Error) => void): this;
    once(event: "connect" | "close" | "secureConnect", listener: () => void): this;
    once(event: "error", listener: (error: Error) => void): this;
  }
  export function createConnection(options: { host: string; port: number }): Socket;
}

declare module "node:tls" {
  import type { Socket } from "node:net";
  export function connect(options: {
    host: string;
    port: number;
    ca?: string;
    cert?: string;
    key?: string;
    servername?: string;
  }): Socket;
}
