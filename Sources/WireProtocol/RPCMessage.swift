// Server side of JSON-RPC 2.0 decoding: one received line becomes a single request, a batch, or the error the spec
// prescribes (parse error, invalid request, empty batch). Dispatching and answering are not here.
// Spec: https://www.jsonrpc.org/specification (sections 4, 5.1 and 6).

/// What one received line means under JSON-RPC 2.0.
public enum RPCIncoming: Sendable, Equatable {
    /// A single request object (valid or not).
    case single(RPCParsed)
    /// A non-empty batch; answer each element that needs an answer, in one array.
    case batch([RPCParsed])
    /// The line is not valid JSON (or breaks a parser limit): answer this -32700 error once, with `"id": null`.
    case parseError(RPCError)
    /// The line is `[]`: answer `RPCError.emptyBatch` (-32600) once with `"id": null`, not in an array.
    case emptyBatch
}

/// One element of what was received: a valid request, or an invalid one that still gets an answer.
public enum RPCParsed: Sendable, Equatable {
    /// A valid request or notification.
    case request(RPCRequest)
    /// Not a valid request object (-32600). `id` is the request's `id` when it was present and valid, else `.null`;
    /// always answer it, even when the `id` member was missing.
    case invalid(id: JSONValue?, RPCError)
}

/// Decodes JSON-RPC 2.0 messages received by the server.
public enum RPCMessage {
    /// Decodes one line (without its terminator).
    ///
    /// Never throws: invalid JSON becomes `.parseError` (-32700, including nesting deeper than `maxDepth` and
    /// numbers out of range); everything the spec calls an invalid request becomes `.invalid` (-32600). Neither
    /// carries `data` (Protocol/errors.md); the message explains the problem. Unknown members are ignored.
    /// O(line length).
    public static func decode(_ line: UnsafeRawBufferPointer, maxDepth: Int = 64) -> RPCIncoming {
        let value: JSONValue
        do {
            value = try JSONParser.parse(line, maxDepth: maxDepth)
        } catch {
            return .parseError(RPCError(.parseError, error.description))
        }
        return self.decode(value: value)
    }

    /// Decodes one line (without its terminator); see `decode(_:maxDepth:)`.
    public static func decode(_ bytes: [UInt8], maxDepth: Int = 64) -> RPCIncoming {
        bytes.withUnsafeBytes { self.decode($0, maxDepth: maxDepth) }
    }

    /// Classifies an already parsed JSON value as a single request, a batch or an empty batch.
    public static func decode(value: JSONValue) -> RPCIncoming {
        switch value {
        case .array(let elements):
            if elements.isEmpty { return .emptyBatch }
            return .batch(elements.map(self.parseRequest))
        default:
            return .single(self.parseRequest(value))
        }
    }

    /// Validates one request object (a top-level value or a batch element).
    public static func parseRequest(_ value: JSONValue) -> RPCParsed {
        guard case .object(let object) = value else {
            return self.invalid(id: .null, "a request must be a JSON object")
        }
        let id = object["id"]
        if let id {
            switch id {
            case .int, .double, .string, .null: break
            case .bool, .array, .object: return self.invalid(id: .null, "\"id\" must be a string, a number or null")
            }
        }
        let answerID = id ?? .null
        guard object["jsonrpc"] == .string("2.0") else {
            return self.invalid(id: answerID, "\"jsonrpc\" must be exactly \"2.0\"")
        }
        guard let methodMember = object["method"] else { return self.invalid(id: answerID, "\"method\" is missing") }
        guard case .string(let method) = methodMember else {
            return self.invalid(id: answerID, "\"method\" must be a string")
        }
        let params = object["params"]
        switch params {
        case nil, .object?, .array?: break
        default: return self.invalid(id: answerID, "\"params\" must be an object or an array")
        }
        return .request(RPCRequest(id: id, method: method, params: params))
    }

    private static func invalid(id: JSONValue, _ reason: String) -> RPCParsed {
        .invalid(id: id, RPCError(.invalidRequest, "invalid request: \(reason)"))
    }
}
