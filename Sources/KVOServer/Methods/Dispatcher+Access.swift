// Access control and per-connection limits, checked before a request reaches its handler
// (Protocol/README.md#access-control, #limits). `hello`, which presents the token, is in Dispatcher+Basics.swift.
import ObjectGraph
import WireProtocol

extension Dispatcher {
    /// Throws 1008 when access control is on and the connection has not presented a valid token yet (anything but
    /// `hello` and `ping`, which reveals nothing and lets health checks work without a token), or when its read-only
    /// token does not allow `request.method`.
    func authorize(_ request: RPCRequest, on session: Session) throws(RPCError) {
        guard self.context.accessControl.isEnabled, request.method != "hello", request.method != "ping" else {
            return
        }
        try self.checkToken(of: session, allows: request.method)
        if let allowed = session.allowedPaths { try self.checkPaths(of: request, allowed: allowed) }
    }

    /// `authorize` for a plain set (RPCPlainSet), from the path's bytes: the same checks, the same errors. (The
    /// caller checks that access control is on.)
    func authorizePlainSet(path: UnsafeRawBufferPointer, on session: Session) throws(RPCError) {
        try self.checkToken(of: session, allows: "set")
        guard let allowed = session.allowedPaths, let keyPath = try? self.keyPath(plain: path) else { return }
        try self.checkPath(keyPath, text: String(decoding: path, as: UTF8.self), allowed: allowed, op: nil)
    }

    /// Throws 1008 when the connection has presented no valid token yet, or when its read-only token does not allow
    /// `method`.
    private func checkToken(of session: Session, allows method: String) throws(RPCError) {
        guard let access = session.access else {
            throw Self.unauthorized("unauthorized: hello with a token first", reason: "hello with a token first")
        }
        if access == .readOnly && !AccessControl.readOnlyMethods.contains(method) {
            throw Self.unauthorized("unauthorized: \(method) needs a read-write token", reason: "read-only token")
        }
    }

    /// A token restricted to key-path patterns may use only paths its patterns grant, spelled from the root: every
    /// op of a transaction is checked before anything runs; `observers`, `stats` and `$ID` paths need an
    /// unrestricted token. A path that is missing or malformed is left to the handler, which refuses it anyway.
    private func checkPaths(of request: RPCRequest, allowed: [PathPattern]) throws(RPCError) {
        switch request.method {
        case "hello", "ping", "unsubscribe":
            return
        case "observers", "stats", "replicate":
            throw Self.unauthorized(
                "unauthorized: \(request.method) needs an unrestricted token", reason: "restricted token")
        case "transaction", "onDisconnect":
            let params = Params(request.params, names: ["ops"], method: request.method)
            guard case .array(let ops)? = params["ops"] else { return }
            for (index, op) in ops.enumerated() {
                guard case .object(let object) = op else { continue }
                try self.checkPath(Self.pathParam(object["params"]), allowed: allowed, op: index)
            }
        default:
            try self.checkPath(Self.pathParam(request.params), allowed: allowed, op: nil)
        }
    }

    private func checkPath(_ text: String?, allowed: [PathPattern], op: Int?) throws(RPCError) {
        guard let text, let path = try? self.keyPath(text) else { return }
        try self.checkPath(path, text: text, allowed: allowed, op: op)
    }

    /// Throws 1008 unless one of `allowed` grants `path` (spelled `text` on the wire).
    private func checkPath(_ path: KeyPath, text: String, allowed: [PathPattern], op: Int?) throws(RPCError) {
        if path.origin == .root && allowed.contains(where: { $0.grants(path.keys) }) { return }
        var data = JSONObject(["reason": .string("path not allowed"), "path": .string(text)])
        if let op { data["op"] = .int(Int64(op)) }
        let shown = text.count > 200 ? String(text.prefix(200)) + "…" : text
        throw RPCError(.unauthorized, "unauthorized: this token may not use '\(shown)'", data: .object(data))
    }

    /// The `path` param, by name or first by position (every method with a path takes it first).
    private static func pathParam(_ params: JSONValue?) -> String? {
        switch params {
        case .object(let object)?: if case .string(let path)? = object["path"] { return path }
        case .array(let items)?: if case .string(let path)? = items.first { return path }
        default: break
        }
        return nil
    }

    /// Throws 1009 when the session already holds `Limits.maxSubscriptionsPerConnection` subscriptions.
    func checkSubscriptionLimit(on session: Session) throws(RPCError) {
        let limit = self.context.limits.maxSubscriptionsPerConnection
        guard session.subscriptionCount >= limit else { return }
        throw RPCError(
            .limitExceeded, "this connection already holds \(limit) subscriptions",
            data: .object(["limit": .int(Int64(limit))]))
    }

    /// Throws 1009 when a subscription's `context`, as compact JSON, is longer than `Limits.maxContextBytes`.
    func checkContextLimit(_ context: JSONValue) throws(RPCError) {
        let limit = self.context.limits.maxContextBytes
        guard limit > 0 else { return }
        var encoded: [UInt8] = []
        JSONWriter.append(context, to: &encoded)
        guard encoded.count > limit else { return }
        throw RPCError(
            .limitExceeded, "subscribe: 'context' is \(encoded.count) bytes, more than \(limit)",
            data: .object(["limit": .int(Int64(limit))]))
    }

    /// Checks `hello`'s token: on a match the connection gets its access; a wrong token is counted, and after
    /// `Limits.maxAuthenticationFailures` of them the connection is closed (`unauthorized`) after the error.
    func authenticate(token: String?, on session: Session) throws(RPCError) {
        let accessControl = self.context.accessControl
        guard accessControl.isEnabled else { return }
        guard let token else {
            if session.access == nil {
                throw Self.unauthorized("unauthorized: hello with a token first", reason: "hello with a token first")
            }
            return
        }
        if let match = accessControl.token(for: token) {
            session.access = match.access
            session.allowedPaths = match.paths
            return
        }
        session.authenticationFailures += 1
        self.context.stats.authenticationFailures += 1
        let limit = self.context.limits.maxAuthenticationFailures
        session.logAuthenticationFailure()
        if limit > 0 && session.authenticationFailures >= limit { session.closeAfterResponse = .unauthorized }
        throw Self.unauthorized("unauthorized: wrong token", reason: "wrong token")
    }

    private static func unauthorized(_ message: String, reason: String) -> RPCError {
        RPCError(.unauthorized, message, data: .object(["reason": .string(reason)]))
    }
}
