// The JSON-RPC 2.0 error object as it goes on the wire, and the catalogue of codes kvod uses (the five codes the
// JSON-RPC spec reserves plus kvod's application codes, see Protocol/errors.md). Mapping engine errors to these
// codes happens in the server, not here.

/// The error codes kvod sends: JSON-RPC's reserved codes and kvod's application codes.
public enum RPCErrorCode: Int, Sendable, CaseIterable {
    /// The line is not valid JSON.
    case parseError = -32700
    /// The JSON is not a valid JSON-RPC 2.0 request object.
    case invalidRequest = -32600
    /// No such method.
    case methodNotFound = -32601
    /// The params do not fit the method.
    case invalidParams = -32602
    /// A bug or an unexpected failure in the server.
    case internalError = -32603
    /// A key on the path does not exist.
    case undefinedKey = 1001
    /// The new value was refused by a validation rule.
    case validationFailed = 1002
    /// The key does not accept null.
    case nullNotAllowed = 1003
    /// An array index is outside the array.
    case indexOutOfRange = 1004
    /// The value has the wrong type for the key.
    case typeMismatch = 1005
    /// The key cannot be written.
    case readOnlyKey = 1006
    /// No subscription has that ID on this connection.
    case unknownSubscription = 1007
    /// The client is not allowed to do that.
    case unauthorized = 1008
    /// A server limit (subscriptions, sizes, rates) was reached.
    case limitExceeded = 1009
    /// The subscriber missed notifications and must fetch the value again.
    case resyncRequired = 1010
    /// A conditional write's condition (`if`) did not hold.
    case preconditionFailed = 1011
    /// A mutation (or a replication link) reached a cluster member that cannot accept it now: a follower, a leader
    /// that cannot prove its lease, a member during an election (docs/SCALING.md).
    case notLeader = 1012
    /// A query's `where` does not parse (Protocol/methods.md#queries): `data.column` says where.
    case invalidQuery = 1013
}

/// A JSON-RPC 2.0 error object: `{"code": …, "message": …, "data": …}`. The code and the members of `data` are the
/// contract; the message is a short lowercase phrase for people (`method not found: frobnicate`).
public struct RPCError: Error, Equatable, Sendable {
    /// The numeric code; usually one of `RPCErrorCode`, but any integer a peer sends is kept.
    public var code: Int
    /// A short human-readable sentence.
    public var message: String
    /// Extra detail; the member is omitted on the wire when nil.
    public var data: JSONValue?

    /// An error with any numeric code.
    public init(code: Int, message: String, data: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.data = data
    }

    /// An error with one of kvod's codes.
    public init(code: RPCErrorCode, message: String, data: JSONValue? = nil) {
        self.init(code: code.rawValue, message: message, data: data)
    }

    /// An error with one of kvod's codes (short form: `RPCError(.undefinedKey, "undefined key")`).
    public init(_ code: RPCErrorCode, _ message: String, data: JSONValue? = nil) {
        self.init(code: code.rawValue, message: message, data: data)
    }

    /// The code as a known `RPCErrorCode`, or nil when a peer sent some other number.
    public var knownCode: RPCErrorCode? { RPCErrorCode(rawValue: self.code) }

    /// -32700 "parse error": the line is not valid JSON.
    public static let parseError = RPCError(.parseError, "parse error")
    /// -32600 "invalid request": the JSON is not a valid request object.
    public static let invalidRequest = RPCError(.invalidRequest, "invalid request")
    /// -32600 "empty batch": the answer to a line that is `[]` (Protocol/examples/errors-and-batches.jsonl).
    public static let emptyBatch = RPCError(.invalidRequest, "empty batch")
    /// -32601 "method not found"; prefer `RPCError(.methodNotFound, "method not found: NAME")` when answering.
    public static let methodNotFound = RPCError(.methodNotFound, "method not found")
    /// -32602 "invalid params".
    public static let invalidParams = RPCError(.invalidParams, "invalid params")
    /// -32603 "internal error".
    public static let internalError = RPCError(.internalError, "internal error")

    /// This error with `data` replaced.
    public func with(data: JSONValue?) -> RPCError {
        var copy = self
        copy.data = data
        return copy
    }
}

extension RPCError: CustomStringConvertible {
    /// `message (code)`, plus the data when present, for logs and CLI output.
    public var description: String {
        if let data = self.data { return "\(self.message) (\(self.code)): \(data)" }
        return "\(self.message) (\(self.code))"
    }
}
