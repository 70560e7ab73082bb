// The `kvod-bench` executable: the load generator of Benchmarks/README.md. Subcommands: `fanout` (subscribers of
// one key, pipelined publishers; kvod or Redis), `mixed` (gets, sets, subscribes, key paths on kvod), `hold` (idle
// connections and subscriptions for the memory figures), `summarize` (medians and kvod/Redis ratios from JSON
// lines) and `codec` (decoding one request line N times, no sockets). Each run drives its sockets from one libuv
// loop on the main thread.

import ArgumentParser
import TLS

@main
struct KVODBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kvod-bench",
        abstract: "Load generator for kvod (and Redis, for comparison).",
        discussion: """
            Drives a server over real sockets from one event loop. See Benchmarks/README.md for the scenarios, \
            what the numbers mean and the scripts that run the comparison with Redis.
            """,
        subcommands: [Fanout.self, Mixed.self, Hold.self, Summarize.self, Codec.self, Sets.self, Handshakes.self])
}

/// Where the server is.
struct ServerOptions: ParsableArguments {
    @Option(help: "The server's address.")
    var host: String = "127.0.0.1"

    @Option(help: "The server's port.")
    var port: Int = 7070

    @Option(name: .customLong("server-pid"), help: "The server's process id, to report its CPU use (Linux /proc).")
    var serverPID: Int32?

    @Option(
        name: .customLong("tls-ca"),
        help: "Connect over TLS (kvod or Redis's --tls-port), trusting the server certificate's CA in this PEM file.")
    var tlsCA: String?

    func validate() throws {
        guard (1...65535).contains(self.port) else { throw ValidationError("--port must be 1...65535") }
    }

    /// The client TLS context for `--tls-ca`, or nil for plaintext. (The server's name is not checked: the
    /// generator dials addresses; the chain is.)
    func tlsContext() throws -> TLSContext? {
        guard let tlsCA else { return nil }
        do {
            return try TLSContext.client(TLSClientSettings(caPath: tlsCA))
        } catch {
            throw ValidationError("--tls-ca: \(error)")
        }
    }
}

/// Parses "1,10,100" into numbers.
func parseList(_ text: String, name: String) throws -> [Int] {
    let numbers = text.split(separator: ",").map { Int($0.filter { $0 != " " }) }
    guard !numbers.isEmpty, numbers.allSatisfy({ ($0 ?? 0) > 0 }) else {
        throw ValidationError("\(name) must be a comma-separated list of positive numbers, got '\(text)'")
    }
    return numbers.compactMap { $0 }
}
