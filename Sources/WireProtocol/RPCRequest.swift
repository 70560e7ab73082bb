// One JSON-RPC 2.0 request or notification as the server receives it, after validation by RPCMessage.decode.
// Answering it (results, errors) is RPCEncoder's job.

/// A valid JSON-RPC 2.0 request (with an `id`) or notification (without one).
public struct RPCRequest: Sendable, Equatable {
    /// The request's `id`: `.int`, `.double`, `.string` or `.null`; nil when the member was absent, which makes
    /// this a notification that gets no response. (`"id": null` is a request answered with `"id": null`.)
    public var id: JSONValue?
    /// The method name; names starting with `rpc.` are ordinary names here.
    public var method: String
    /// The `params` member: an `.object` or `.array`, or nil when absent.
    public var params: JSONValue?

    /// A request; pass `id: nil` for a notification.
    public init(id: JSONValue?, method: String, params: JSONValue? = nil) {
        self.id = id
        self.method = method
        self.params = params
    }

    /// True when the request has no `id` member, so no response may be sent.
    public var isNotification: Bool { self.id == nil }
}
