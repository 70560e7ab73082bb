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
    /// always answer it, even when the `id` member was missing. `idText`: as `RPCRequest.idText`.
    case invalid(id: JSONValue?, RPCError, idText: [UInt8]? = nil)

    /// Equal when they mean the same (an id's spelling, `idText`, is not compared: RPCRequest's equality).
    public static func == (left: RPCParsed, right: RPCParsed) -> Bool {
        switch (left, right) {
        case (.request(let one), .request(let other)): one == other
        case (.invalid(let id, let error, _), .invalid(let otherID, let otherError, _)): id == otherID && error == otherError
        default: false
        }
    }
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
        do {
            var parser = JSONParser(line, maxDepth: maxDepth)
            // The usual line, a single request object, is validated as it is read, without building the object.
            if let request = try parser.parseRequestObject() { return .single(request) }
            // A batch: its request objects read the same way (their ids' bytes kept as the line has them).
            if let batch = try parser.parseBatch() { return batch }
            // Anything else: something that is no request at all.
            return self.decode(value: try parser.parseDocument())
        } catch {
            return .parseError(RPCError(.parseError, error.description))
        }
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
        return self.validate(
            id: object["id"], hasVersion: object["jsonrpc"] == .string("2.0"), method: object["method"],
            params: object["params"])
    }

    /// Validates the members of one request object that JSON-RPC gives a meaning (nil when absent); `hasVersion`
    /// says whether `jsonrpc` is exactly "2.0".
    static func validate(
        id: consuming JSONValue?, hasVersion: Bool, method: consuming JSONValue?, params: consuming JSONValue?,
        idText: [UInt8]? = nil
    ) -> RPCParsed {
        if let id {
            switch id {
            case .int, .double, .string, .null: break
            case .bool, .array, .object: return self.invalid(id: .null, "\"id\" must be a string, a number or null")
            }
        }
        guard hasVersion else {
            return self.invalid(id: id ?? .null, "\"jsonrpc\" must be exactly \"2.0\"", idText: idText)
        }
        guard let methodMember = method else {
            return self.invalid(id: id ?? .null, "\"method\" is missing", idText: idText)
        }
        guard case .string(let name) = methodMember else {
            return self.invalid(id: id ?? .null, "\"method\" must be a string", idText: idText)
        }
        switch params {
        case nil, .object?, .array?: break
        default: return self.invalid(id: id ?? .null, "\"params\" must be an object or an array", idText: idText)
        }
        var request = RPCRequest(id: id, method: name, params: params)
        request.idText = idText
        return .request(request)
    }

    private static func invalid(id: JSONValue, _ reason: String, idText: [UInt8]? = nil) -> RPCParsed {
        .invalid(id: id, RPCError(.invalidRequest, "invalid request: \(reason)"), idText: idText)
    }
}

extension JSONParser {
    /// The member names a request object is read for.
    private enum RequestMemberName {
        case jsonrpc, id, method, params, other
    }

    /// When the document (after whitespace) is an object: parses it to the end of the input and validates it as a
    /// request, reading the members JSON-RPC gives a meaning without building the object. Otherwise returns nil with
    /// `index` unchanged, ready for `parseDocument`. Accepts and rejects exactly what `parseDocument` does, with the
    /// same errors; like `JSONObject`, a later duplicate member replaces the earlier one. `depth`: the open arrays
    /// around it (1 in a batch, which calls it with `wholeInput` false: the object need not end the input).
    mutating func parseRequestObject(depth: Int = 0, wholeInput: Bool = true) throws(WireError) -> RPCParsed? {
        let start = self.index
        self.skipWhitespace()
        guard self.maxDepth > depth, self.index < self.bytes.count, self.bytes[self.index] == UInt8(ascii: "{") else {
            self.index = start
            return nil
        }
        self.index &+= 1
        var id: JSONValue? = nil
        var idText: [UInt8]? = nil
        var hasVersion = false
        var method: JSONValue? = nil
        var params: JSONValue? = nil
        if self.peekSkippingWhitespace() == UInt8(ascii: "}") {
            self.index &+= 1
        } else {
            while true {
                let name = try self.parseRequestMemberName()
                if name == .jsonrpc && self.index &+ 5 <= self.bytes.count, let base = self.bytes.baseAddress,
                    Self.word(base + self.index, count: 5, available: self.bytes.count &- self.index)
                        == Self.pack(#""2.0""#)
                {
                    // The usual version, spelled plainly.
                    hasVersion = true
                    self.index &+= 5
                } else {
                    // One call site, so that the value parser is inlined once.
                    let valueStart = self.index
                    let value = try self.parseValue(depth: depth &+ 1)
                    switch name {
                    case .jsonrpc: hasVersion = value == .string("2.0")
                    case .id:
                        id = value
                        idText = self.idText(of: value, from: valueStart)
                    case .method: method = value
                    case .params: params = value
                    case .other: break
                    }
                }
                let byte = self.peekSkippingWhitespace()
                if byte == UInt8(ascii: ",") {
                    self.index &+= 1
                    continue
                }
                guard byte == UInt8(ascii: "}") else { throw self.afterMemberError(inObject: true) }
                self.index &+= 1
                break
            }
        }
        if wholeInput { try self.expectEndOfInput() }
        return RPCMessage.validate(id: id, hasVersion: hasVersion, method: method, params: params, idText: idText)
    }

    /// The bytes of an id just parsed (from `start`, which may be followed by whitespace, to `index`), when writing
    /// `value` would not give them back; nil otherwise (the usual integer, a string without escapes, null).
    private func idText(of value: JSONValue, from start: Int) -> [UInt8]? {
        switch value {
        case .int(let number):
            guard number == 0 else { return nil }  // an integer's digits are its own, but for "-0"
        case .double: break
        case .string: break
        default: return nil
        }
        var first = start
        while first < self.index, self.bytes[first] <= 0x20 { first &+= 1 }  // JSON whitespace
        let text = UnsafeBufferPointer(rebasing: self.bytes[first..<self.index])
        if case .int = value, text.first != UInt8(ascii: "-") { return nil }
        if case .string = value, !text.contains(UInt8(ascii: "\\")) { return nil }
        return Array(text)
    }

    /// When the document (after whitespace) is an array: parses it to the end of the input as a batch, each request
    /// object read as `parseRequestObject` reads one (any other element validated as `RPCMessage.parseRequest`
    /// does). Otherwise returns nil with `index` unchanged. Accepts and rejects exactly what `parseDocument` does.
    mutating func parseBatch() throws(WireError) -> RPCIncoming? {
        let start = self.index
        self.skipWhitespace()
        guard self.maxDepth > 0, self.index < self.bytes.count, self.bytes[self.index] == UInt8(ascii: "[") else {
            self.index = start
            return nil
        }
        self.index &+= 1
        if self.peekSkippingWhitespace() == UInt8(ascii: "]") {
            self.index &+= 1
            try self.expectEndOfInput()
            return .emptyBatch
        }
        var elements: [RPCParsed] = []
        while true {
            if let element = try self.parseRequestObject(depth: 1, wholeInput: false) {
                elements.append(element)
            } else {
                elements.append(RPCMessage.parseRequest(try self.parseValue(depth: 1)))
            }
            if let byte = self.peekSkippingWhitespace() {
                self.index &+= 1
                if byte == UInt8(ascii: ",") { continue }
                if byte == UInt8(ascii: "]") { break }
                self.index &-= 1
            }
            throw self.afterMemberError(inObject: false)
        }
        try self.expectEndOfInput()
        return .batch(elements)
    }

    /// A member name of the request object and its colon, as `parseKey` reads it.
    @inline(__always)
    private mutating func parseRequestMemberName() throws(WireError) -> RequestMemberName {
        // The usual names, spelled plainly, are recognized from the eight bytes after the opening quote (closing
        // quote included); anything else takes the general path.
        if self.peekSkippingWhitespace() == UInt8(ascii: "\"") && self.index + 9 <= self.bytes.count,
            let base = self.bytes.baseAddress
        {
            let word = UInt64(littleEndian: UnsafeRawPointer(base + (self.index &+ 1)).loadUnaligned(as: UInt64.self))
            let name: RequestMemberName?
            let length: Int
            if word == Self.pack("jsonrpc\"") {
                (name, length) = (.jsonrpc, 8)
            } else if word & 0xFF_FFFF == Self.pack("id\"") {
                (name, length) = (.id, 3)
            } else if word & 0xFF_FFFF_FFFF_FFFF == Self.pack("method\"") {
                (name, length) = (.method, 7)
            } else if word & 0xFF_FFFF_FFFF_FFFF == Self.pack("params\"") {
                (name, length) = (.params, 7)
            } else {
                (name, length) = (nil, 0)
            }
            if let name {
                self.index &+= 1 + length
                try self.expectColon()
                return name
            }
        }
        return try self.parseOtherRequestMemberName()
    }

    /// `parseRequestMemberName` for names spelled in any other way.
    @inline(never)
    private mutating func parseOtherRequestMemberName() throws(WireError) -> RequestMemberName {
        // Compared as Swift strings, which is what JSONObject's lookup does (escapes and canonical equivalence).
        let name: RequestMemberName =
            switch try self.parseKey().key {
            case "id": .id
            case "method": .method
            case "params": .params
            case "jsonrpc": .jsonrpc
            default: .other
            }
        return name
    }
}
