// Typed helpers for kvod's methods (hello, ping, get, set, subscribe, unsubscribe): each builds the params, calls,
// and checks the result's shape. The method table itself is in Protocol/README.md.

public import WireProtocol

extension KVOClient {
    /// Calls `hello` and returns the server's result (`{server, version, protocol}`).
    @discardableResult
    public func hello(client: String? = nil) throws(KVOClientError) -> JSONValue {
        try self.call("hello", client.map { ["client": .string($0)] } ?? [:])
    }

    /// Calls `ping`; throws unless the server answers `"pong"`.
    public func ping() throws(KVOClientError) {
        let result = try self.call("ping")
        guard result == "pong" else { throw .protocolViolation("ping answered \(result), not \"pong\"") }
    }

    /// The value at `path` (null when never set).
    public func get(_ path: String) throws(KVOClientError) -> JSONValue {
        try self.getWithSeq(path).value
    }

    /// The value at `path` and the `seq` of the state it was read from.
    public func getWithSeq(_ path: String) throws(KVOClientError) -> (value: JSONValue, seq: UInt64) {
        let result = try self.call("get", ["path": .string(path)])
        guard let value = result["value"] else { throw .protocolViolation("get result has no value: \(result)") }
        return (value, try Self.seq(in: result, of: "get"))
    }

    /// Sets `path` to `value` and returns the mutation's `seq`.
    @discardableResult
    public func set(_ path: String, _ value: JSONValue) throws(KVOClientError) -> UInt64 {
        let result = try self.call("set", ["path": .string(path), "value": value])
        return try Self.seq(in: result, of: "set")
    }

    /// Subscribes to `path` with KVO `options` (any of "new", "old", "initial", "prior") and an optional `context`
    /// that comes back verbatim in each notification. Returns the subscription id and the seq it was made at. With
    /// "initial", the initial notification is queued by the time this returns only if it already arrived; read it
    /// with `nextNotification`.
    @discardableResult
    public func subscribe(
        _ path: String, options: [String], context: JSONValue? = nil
    ) throws(KVOClientError) -> (id: Int, seq: UInt64) {
        var params: JSONObject = ["path": .string(path), "options": .array(options.map { .string($0) })]
        if let context { params["context"] = context }
        let result = try self.call("subscribe", .object(params))
        guard case .int(let id)? = result["subscription"], let subscription = Int(exactly: id) else {
            throw .protocolViolation("subscribe result has no integer subscription: \(result)")
        }
        return (subscription, try Self.seq(in: result, of: "subscribe"))
    }

    /// Ends subscription `id` (which must belong to this connection).
    public func unsubscribe(_ id: Int) throws(KVOClientError) {
        let result = try self.call("unsubscribe", ["subscription": .int(Int64(id))])
        guard result == true else { throw .protocolViolation("unsubscribe answered \(result), not true") }
    }

    /// The non-negative integer `seq` member of `result`.
    private static func seq(in result: JSONValue, of method: String) throws(KVOClientError) -> UInt64 {
        guard case .int(let seq)? = result["seq"], seq >= 0 else {
            throw .protocolViolation("\(method) result has no non-negative integer seq: \(result)")
        }
        return UInt64(seq)
    }
}
