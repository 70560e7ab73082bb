// One JSON-RPC 2.0 request or notification as the server receives it, after validation by RPCMessage.decode.
// Answering it (results, errors) is RPCEncoder's job.

/// A valid JSON-RPC 2.0 request (with an `id`) or notification (without one).
public struct RPCRequest: Sendable, Equatable {
    /// The request's `id`: `.int`, `.double`, `.string` or `.null`; nil when the member was absent, which makes
    /// this a notification that gets no response. (`"id": null` is a request answered with `"id": null`.)
    public var id: JSONValue?
    /// The id's bytes as they were on the line, kept when writing `id` would not give them back (a number with a
    /// fraction or an exponent, or too large for 64 bits; `-0`; a string with escapes): the response echoes these
    /// (JSON-RPC: the same id). Nil for the usual ids. Not part of equality.
    public var idText: [UInt8]?
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

    public static func == (left: RPCRequest, right: RPCRequest) -> Bool {
        left.id == right.id && left.method == right.method && left.params == right.params
    }
}
