// The options every kvoctl subcommand shares (where kvod is, how long to wait, the token to present, TLS) and the one
// place that turns a KVOClientError into a message on stderr and an exit status.

import ArgumentParser
import KVOClient
import TLS
import WireProtocol
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where kvod listens (one address, or the members of a cluster) and how long to wait for it.
struct ConnectionOptions: ParsableArguments {
    @Option(
        name: [.customLong("host"), .customLong("connect")],
        help: ArgumentHelp(
            "kvod's address: HOST or HOST:PORT, or a comma-separated list of them (the members of a cluster, tried "
                + "in turn; default: $KVOD_HOST, else 127.0.0.1); kvods://HOST:PORT connects over TLS.",
            valueName: "addresses"))
    var host: String?

    @Option(help: ArgumentHelp("The port of an address without one (default: $KVOD_PORT, else 7070).", valueName: "port"))
    var port: Int?

    @Option(
        help: ArgumentHelp(
            "Seconds to wait for the connection and for each response (default: 5); for watch, also the longest "
                + "wait between notifications (default: forever).",
            valueName: "seconds"))
    var timeout: Double?

    @Option(
        help: ArgumentHelp(
            "Seconds to keep retrying a mutation refused with 1012 \"not the leader\" while a leader is elected, "
                + "and for watch, to reconnect after a disconnect: to another member, or to the same kvod restarting "
                + "(default: 10).",
            valueName: "seconds"))
    var failoverWait: Double?

    @Option(
        help: ArgumentHelp(
            "The token to present in hello before anything else (default: $KVOD_TOKEN; prefer the environment: a "
                + "flag shows in the process list).",
            valueName: "token"))
    var token: String?

    @Flag(help: "Connect over TLS (as a kvods:// address, --cacert or --cert do).")
    var tls = false

    @Option(
        help: ArgumentHelp(
            "CA certificates (PEM) kvod's certificate must chain to, over TLS (default: $KVOD_CACERT, else the "
                + "system's).", valueName: "file"))
    var cacert: String?

    @Option(
        help: ArgumentHelp(
            "A client certificate (PEM) to present over TLS, for a kvod that asks for one (default: $KVOD_CERT).",
            valueName: "file"))
    var cert: String?

    @Option(help: ArgumentHelp("The private key (PEM) of --cert (default: $KVOD_KEY).", valueName: "file"))
    var key: String?

    /// Whether to connect over TLS: `--tls`, a CA or client certificate, or a `kvods://` address.
    var usesTLS: Bool {
        self.tls || self.resolvedCACert != nil || self.resolvedCert != nil
            || self.resolvedHost.contains(MemberAddress.tlsScheme)
    }

    var resolvedCACert: String? { self.cacert ?? Self.environment("KVOD_CACERT") }
    var resolvedCert: String? { self.cert ?? Self.environment("KVOD_CERT") }
    var resolvedKey: String? { self.key ?? Self.environment("KVOD_KEY") }

    /// The TLS context to connect with, or nil for plaintext. Made anew for each connection: kvoctl makes few.
    func tlsContext() throws(KVOClientError) -> TLSContext? {
        guard self.usesTLS else { return nil }
        do {
            return try TLSContext.client(
                TLSClientSettings(caPath: self.resolvedCACert, certificatePath: self.resolvedCert, keyPath: self.resolvedKey))
        } catch {
            throw .tls("kvod: \(error)")
        }
    }

    /// The token to present: `--token`, else `$KVOD_TOKEN`, else none (no hello is sent).
    var resolvedToken: String? {
        self.token ?? Self.environment("KVOD_TOKEN")
    }

    /// The address text: `--host`/`--connect`, else `$KVOD_HOST`, else 127.0.0.1.
    var resolvedHost: String {
        self.host ?? Self.environment("KVOD_HOST") ?? "127.0.0.1"
    }

    /// The port of addresses without one: `--port`, else `$KVOD_PORT`, else 7070 (`validate()` checked it).
    var resolvedPort: Int {
        self.port ?? Self.environment("KVOD_PORT").flatMap { Int($0) } ?? 7070
    }

    /// The addresses to try, in order (`validate()` checked that they parse).
    var addresses: [MemberAddress] {
        (try? MemberAddress.parseList(self.resolvedHost, defaultPort: self.resolvedPort))
            ?? [MemberAddress(host: "127.0.0.1", port: self.resolvedPort)]
    }

    /// The connect and response timeout in seconds.
    var resolvedTimeout: Double { self.timeout ?? 5 }

    /// How long to keep following the leader, or looking for another member, in seconds.
    var resolvedFailoverWait: Double { self.failoverWait ?? 10 }

    /// Rejects invalid combinations with a ValidationError (exit status 64).
    func validate() throws {
        if let port = self.port, !(1...65535).contains(port) {
            throw ValidationError("--port must be between 1 and 65535, not \(port).")
        }
        if self.port == nil, let text = Self.environment("KVOD_PORT") {
            guard let port = Int(text), (1...65535).contains(port) else {
                throw ValidationError("KVOD_PORT must be a port number between 1 and 65535, not '\(text)'.")
            }
        }
        do {
            _ = try MemberAddress.parseList(self.resolvedHost, defaultPort: self.resolvedPort)
        } catch {
            throw ValidationError("\(self.host == nil ? "KVOD_HOST" : "--host"): \(error).")
        }
        if let timeout = self.timeout, !(timeout > 0 && timeout <= 1_000_000) {
            throw ValidationError("--timeout must be a positive number of seconds (at most 1000000).")
        }
        if let wait = self.failoverWait, !(wait >= 0 && wait <= 3600) {
            throw ValidationError("--failover-wait must be a number of seconds from 0 to 3600.")
        }
        if (self.resolvedCert == nil) != (self.resolvedKey == nil) {
            throw ValidationError("--cert and --key go together: give both.")
        }
    }

    /// Connects to the first address that accepts and, with a token, presents it (`hello`); or reports the failure
    /// and throws the matching exit status. `authenticate: false` leaves the hello to the caller (`kvoctl hello`).
    func connect(authenticate: Bool = true) throws(ExitCode) -> MemberClient {
        try MemberClient(options: self, authenticate: authenticate)
    }

    /// Connects a bare line connection (for `kvoctl -`) to the first address that accepts and, with a token,
    /// presents it (the hello's response is not echoed); or reports the failure and throws the exit status.
    func connectLines() throws(ExitCode) -> LineConnection {
        var lastError = KVOClientError.closed
        for address in self.addresses {
            do {
                let connection = try LineConnection(
                    host: address.host, port: address.port, timeout: .seconds(self.resolvedTimeout),
                    tls: try self.tlsContext())
                if let token = self.resolvedToken { try Self.authenticate(connection, token: token) }
                return connection
            } catch .connectionFailed(let host, let port, let reason) {
                lastError = .connectionFailed(host: host, port: port, reason: reason)
            } catch {
                throw self.report(error, at: address)
            }
        }
        throw self.report(lastError, at: self.addresses.last)
    }

    /// Sends `hello` with `token` on a bare connection and waits for its response.
    private static func authenticate(_ connection: LineConnection, token: String) throws(KVOClientError) {
        var bytes: [UInt8] = []
        RPCEncoder.appendRequest(
            id: "kvoctl-hello", method: "hello", params: ["client": "kvoctl", "token": .string(token)], to: &bytes)
        bytes.append(UInt8(ascii: "\n"))
        try connection.send(bytes)
        let line = try connection.readLine(timeout: connection.writeTimeout)
        switch try? RPCServerMessage.decode(line) {
        case .response?: return
        case .error(_, let error)?: throw .server(error)
        default: throw .protocolViolation("expected the response to hello: \(String(decoding: line.prefix(200), as: UTF8.self))")
        }
    }

    /// Prints `error` to stderr as one `kvoctl: …` line naming `address` (the member it came from; by default the
    /// first address) and returns the exit status it maps to.
    func report(_ error: KVOClientError, at address: MemberAddress? = nil) -> ExitCode {
        let endpoint = (address ?? self.addresses[0]).description
        switch error {
        case .connectionFailed(let host, let port, let reason):
            Output.error("cannot connect to \(formatEndpoint(host: host, port: port)): \(reason)")
            return KVOCtlExitCode.connectionFailed
        case .closed:
            Output.error("connection to \(endpoint) lost: closed by the server")
            return KVOCtlExitCode.connectionFailed
        case .connectionLost(let reason):
            Output.error("connection to \(endpoint) lost: \(reason)")
            return KVOCtlExitCode.connectionFailed
        case .timeout(let what):
            Output.error("timed out \(what) (\(endpoint))")
            return KVOCtlExitCode.timeout
        case .server(let rpcError):
            Output.error(Self.describe(rpcError))
            return KVOCtlExitCode.serverError
        case .protocolViolation(let what):
            Output.error("protocol error from \(endpoint): \(what)")
            return KVOCtlExitCode.protocolError
        case .tls(let what):
            Output.error("TLS with \(what)")
            return KVOCtlExitCode.connectionFailed
        }
    }

    /// `error CODE: MESSAGE`, followed by the data as compact JSON when present.
    static func describe(_ error: RPCError) -> String {
        if let data = error.data { return "error \(error.code): \(error.message) \(data)" }
        return "error \(error.code): \(error.message)"
    }

    /// A non-empty environment variable.
    private static func environment(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        let text = String(cString: value)
        return text.isEmpty ? nil : text
    }
}

/// Parses command-line text as a JSON value, or takes it as a string when it is not JSON (`Alice` → "Alice").
func parseJSONOrString(_ text: String) -> JSONValue {
    (try? JSONParser.parse(text)) ?? .string(text)
}

extension ConnectionOptions {
    /// Connects, calls `method` with `params` (following the leader on 1012), and returns the result; failures
    /// become exit statuses.
    func call(_ method: String, _ params: JSONValue?) throws(ExitCode) -> JSONValue {
        let client = try self.connect()
        do {
            return try client.call(method, params)
        } catch {
            throw client.report(error)
        }
    }
}
