// Client side of JSON-RPC 2.0 decoding: what a kvod server sends (responses, errors, notifications, batches of
// them), strictly validated. A server that breaks the protocol is reported as a `.syntax` error with a clear reason.

/// One line received from a JSON-RPC 2.0 server.
public enum RPCServerMessage: Sendable, Equatable {
    /// A successful response to the request with this `id`.
    case response(id: JSONValue, result: JSONValue)
    /// An error response; `id` is `.null` when the server could not tell which request failed.
    case error(id: JSONValue, RPCError)
    /// A server-initiated notification (no `id`); `params` is an object or array, or nil when absent.
    case notification(method: String, params: JSONValue?)
    /// The answer to a batch: a non-empty array of the above (never nested).
    case batch([RPCServerMessage])

    /// Decodes one line (without its terminator). Throws the parser's error for invalid JSON, and
    /// `.syntax(offset: 0, reason:)` naming the problem for valid JSON that is not a server message. O(length).
    public static func decode(
        _ line: UnsafeRawBufferPointer, maxDepth: Int = 64
    ) throws(WireError) -> RPCServerMessage {
        try self.decode(value: try JSONParser.parse(line, maxDepth: maxDepth))
    }

    /// Decodes one line (without its terminator); see `decode(_:maxDepth:)`.
    public static func decode(_ bytes: [UInt8], maxDepth: Int = 64) throws(WireError) -> RPCServerMessage {
        try self.decode(value: try JSONParser.parse(bytes, maxDepth: maxDepth))
    }

    /// Classifies an already parsed value; see `decode(_:maxDepth:)`.
    public static func decode(value: JSONValue) throws(WireError) -> RPCServerMessage {
        guard case .array(let elements) = value else { return try self.decodeObject(value) }
        guard !elements.isEmpty else { throw self.malformed("empty batch") }
        var messages: [RPCServerMessage] = []
        messages.reserveCapacity(elements.count)
        for element in elements {
            guard case .object = element else { throw self.malformed("batch element is not an object") }
            messages.append(try self.decodeObject(element))
        }
        return .batch(messages)
    }

    private static func decodeObject(_ value: JSONValue) throws(WireError) -> RPCServerMessage {
        guard case .object(let object) = value else { throw self.malformed("message is not a JSON object") }
        guard object["jsonrpc"] == .string("2.0") else { throw self.malformed("\"jsonrpc\" is not \"2.0\"") }

        if let method = object["method"] {
            guard case .string(let name) = method else { throw self.malformed("\"method\" is not a string") }
            guard object["id"] == nil else { throw self.malformed("server sent a request (\"method\" with \"id\")") }
            let params = object["params"]
            switch params {
            case nil, .object?, .array?: break
            default: throw self.malformed("notification \"params\" is not an object or an array")
            }
            return .notification(method: name, params: params)
        }

        guard let id = object["id"] else { throw self.malformed("response has no \"id\"") }
        switch id {
        case .int, .double, .string, .null: break
        case .bool, .array, .object: throw self.malformed("response \"id\" is not a string, a number or null")
        }
        switch (object["result"], object["error"]) {
        case (let result?, nil):
            return .response(id: id, result: result)
        case (nil, let error?):
            return .error(id: id, try self.decodeError(error))
        case (nil, nil):
            throw self.malformed("response has neither \"result\" nor \"error\"")
        case (_?, _?):
            throw self.malformed("response has both \"result\" and \"error\"")
        }
    }

    private static func decodeError(_ value: JSONValue) throws(WireError) -> RPCError {
        guard case .object(let object) = value else { throw self.malformed("\"error\" is not an object") }
        guard case .int(let code)? = object["code"], let intCode = Int(exactly: code) else {
            throw self.malformed("error \"code\" is not an integer")
        }
        guard case .string(let message)? = object["message"] else {
            throw self.malformed("error \"message\" is not a string")
        }
        return RPCError(code: intCode, message: message, data: object["data"])
    }

    private static func malformed(_ reason: String) -> WireError {
        .syntax(offset: 0, reason: "not a JSON-RPC 2.0 server message: \(reason)")
    }
}
