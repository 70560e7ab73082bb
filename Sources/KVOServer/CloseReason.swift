// Why a connection closed. Every close carries one; it is logged once and counted (ServerStats). The raw values are
// the `reason` of the `closing` notification (Protocol/README.md#closing).

/// Why a connection was closed.
public enum CloseReason: String, Sendable, CaseIterable {
    /// The client closed its end.
    case clientClosed = "client_closed"
    /// Reading or writing failed (reset by peer, ...).
    case ioError = "io_error"
    /// A request line exceeded `Limits.maxLineBytes`.
    case lineTooLong = "line_too_long"
    /// The client did not read its output fast enough: `Limits.outputHardLimitBytes`, or
    /// `Limits.outputSoftLimitBytes` for `Limits.outputSoftLimitSeconds` (OutputLimiter).
    case slowConsumer = "slow_consumer"
    /// `Limits.maxConnections` connections were already open.
    case tooManyConnections = "too_many_connections"
    /// The client sent `Limits.maxAuthenticationFailures` wrong tokens.
    case unauthorized = "unauthorized"
    /// With access control on, the client sent no accepted `hello` within `Limits.authTimeoutSeconds`.
    case authTimeout = "auth_timeout"
    /// The client broke the WebSocket protocol: a bad upgrade request (answered with an HTTP error), a frame the
    /// protocol forbids, a binary message, text that is not UTF-8 (the close frame carries 1002, 1003 or 1007).
    case protocolError = "protocol_error"
    /// The server is shutting down.
    case serverShutdown = "server_shutdown"
    /// A replication link to a member that stopped being the leader, or a client session with `onDisconnect` ops
    /// there (docs/SCALING.md#presence-across-a-failover).
    case notLeader = "not_leader"
    /// With `--sync-replicas`: a mutation's response waited the lease time for followers to journal it; what was
    /// held is dropped (the mutation's outcome is unknown to the client, as when a leader dies).
    case replicationTimeout = "replication_timeout"

    /// Whether the client is told why with a `closing` notice before the close.
    var sendsNotice: Bool {
        switch self {
        case .lineTooLong, .serverShutdown, .tooManyConnections, .unauthorized, .authTimeout, .notLeader,
            .replicationTimeout: true
        case .clientClosed, .ioError, .slowConsumer, .protocolError: false
        }
    }

    /// Whether the server closed the connection because the client passed a limit (logged as a warning).
    var isLimit: Bool {
        switch self {
        case .lineTooLong, .slowConsumer, .tooManyConnections, .unauthorized, .authTimeout: true
        case .clientClosed, .ioError, .serverShutdown, .protocolError, .notLeader, .replicationTimeout: false
        }
    }
}
