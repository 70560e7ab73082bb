// Why a connection closed. Every close carries one; it is logged once and counted (ServerStats).

/// Why a connection was closed.
public enum CloseReason: String, Sendable, CaseIterable {
    /// The client closed its end.
    case clientClosed = "client_closed"
    /// Reading or writing failed (reset by peer, ...).
    case ioError = "io_error"
    /// A request line exceeded `Limits.maxLineBytes`.
    case lineTooLong = "line_too_long"
    /// Output queued for the client exceeded `Limits.outputHardLimitBytes`.
    case outputLimit = "output_limit"
    /// The server is shutting down.
    case serverShutdown = "server_shutdown"
}
