// The one error type of the KVOClient module: connection set-up, I/O, timeouts, and error responses from the server.
// Each case says enough for a one-line message; kvoctl maps the cases onto its exit codes.

public import WireProtocol

/// Why a client operation failed.
public enum KVOClientError: Error, Sendable {
    /// No connection could be made to `host:port`; `reason` is the resolver's or the last socket call's message.
    case connectionFailed(host: String, port: Int, reason: String)
    /// Nothing arrived (or could be written) in time; the text says what was being waited for.
    case timeout(String)
    /// The peer closed the connection (end of stream, reset, or broken pipe), or `close()` was called.
    case closed
    /// A socket call failed on an open connection for a reason other than the peer closing it.
    case connectionLost(String)
    /// The server answered with a JSON-RPC error object.
    case server(RPCError)
    /// The server sent something this client cannot make sense of (not JSON, not JSON-RPC, an unexpected id, a line
    /// over the client's size limit).
    case protocolViolation(String)
    /// TLS failed: the handshake (a certificate that did not verify, a server that is no TLS server or refused ours)
    /// or a record; the text names the endpoint and the reason.
    case tls(String)
}

extension KVOClientError: CustomStringConvertible {
    /// A one-line explanation suitable for an error message.
    public var description: String {
        switch self {
        case .connectionFailed(let host, let port, let reason):
            "cannot connect to \(formatEndpoint(host: host, port: port)): \(reason)"
        case .timeout(let what):
            "timed out \(what)"
        case .closed:
            "connection closed by peer"
        case .connectionLost(let reason):
            "connection lost: \(reason)"
        case .server(let error):
            if let data = error.data {
                "server error \(error.code): \(error.message) \(data)"
            } else {
                "server error \(error.code): \(error.message)"
            }
        case .protocolViolation(let what):
            "protocol violation: \(what)"
        case .tls(let what):
            "TLS with \(what)"
        }
    }
}

/// `host:port`, with an IPv6 literal in brackets (`[::1]:7070`).
public func formatEndpoint(host: String, port: Int) -> String {
    host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
}
