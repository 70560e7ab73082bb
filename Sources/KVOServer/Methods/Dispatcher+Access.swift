// Access control and per-connection limits, checked before a request reaches its handler
// (Protocol/README.md#access-control, #limits). `hello`, which presents the token, is in Dispatcher+Basics.swift.
import WireProtocol

extension Dispatcher {
    /// Throws 1008 when access control is on and the connection has not presented a valid token yet (anything but
    /// `hello` and `ping`, which reveals nothing and lets health checks work without a token), or when its read-only
    /// token does not allow `request.method`.
    func authorize(_ request: RPCRequest, on connection: Connection) throws(RPCError) {
        guard self.server.configuration.accessControl.isEnabled, request.method != "hello", request.method != "ping" else {
            return
        }
        guard let access = connection.access else {
            self.server.countRequest(isMutation: false)
            throw Self.unauthorized("unauthorized: hello with a token first", reason: "hello with a token first")
        }
        if access == .readOnly && !AccessControl.readOnlyMethods.contains(request.method) {
            self.server.countRequest(isMutation: false)
            throw Self.unauthorized("unauthorized: \(request.method) needs a read-write token", reason: "read-only token")
        }
    }

    /// Throws 1009 when the connection already holds `Limits.maxSubscriptionsPerConnection` subscriptions.
    func checkSubscriptionLimit(on connection: Connection) throws(RPCError) {
        let limit = self.server.limits.maxSubscriptionsPerConnection
        guard connection.subscriptions.count >= limit else { return }
        self.server.countRequest(isMutation: false)
        throw RPCError(
            .limitExceeded, "this connection already holds \(limit) subscriptions",
            data: .object(["limit": .int(Int64(limit))]))
    }

    /// Checks `hello`'s token: on a match the connection gets its access; a wrong token is counted, and after
    /// `Limits.maxAuthenticationFailures` of them the connection is closed (`unauthorized`) after the error.
    func authenticate(token: String?, on connection: Connection) throws(RPCError) {
        let accessControl = self.server.configuration.accessControl
        guard accessControl.isEnabled else { return }
        guard let token else {
            if connection.access == nil {
                throw Self.unauthorized("unauthorized: hello with a token first", reason: "hello with a token first")
            }
            return
        }
        if let access = accessControl.access(for: token) {
            connection.access = access
            return
        }
        connection.authenticationFailures += 1
        self.server.stats.authenticationFailures += 1
        let limit = self.server.limits.maxAuthenticationFailures
        self.server.logger.info(
            "wrong token in hello",
            metadata: [
                "connection.id": "\(connection.id)", "connection.remote": "\(connection.remoteAddress)",
                "auth.failures": "\(connection.authenticationFailures)",
            ])
        if limit > 0 && connection.authenticationFailures >= limit { connection.closeAfterResponse = .unauthorized }
        throw Self.unauthorized("unauthorized: wrong token", reason: "wrong token")
    }

    private static func unauthorized(_ message: String, reason: String) -> RPCError {
        RPCError(.unauthorized, message, data: .object(["reason": .string(reason)]))
    }
}
