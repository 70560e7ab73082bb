// `get` and `set`: key-value coding over the wire (Protocol/methods.md#get, #set).
import ObjectGraph
import ValueCoding
import WireProtocol

extension Dispatcher {
    static let getParameterNames = ["path", "meta", "offset", "limit", "query"]

    func get(_ request: RPCRequest, on session: Session) throws {
        let params = Params(request.params, names: Self.getParameterNames, method: "get")
        try params.rejectUnknown()
        let path = try self.keyPath(params.string("path"))
        let withMeta: Bool
        let meta = params["meta"]
        switch meta {
        case nil, .bool(false)?: withMeta = false
        case .bool(true)?: withMeta = true
        default: throw RPCError.badParams("get: 'meta' must be a boolean")
        }
        // A page or a query only when there is more than path and meta: the common get, `{"path": …}`, looks up
        // nothing more.
        if params.count > (meta == nil ? 1 : 2) {
            if let query = params["query"] {
                if withMeta || params["offset"] != nil || params["limit"] != nil {
                    throw RPCError.badParams("get: 'query' goes with neither 'meta' nor 'offset' and 'limit' (the query has its own)")
                }
                session.noteCostlyRequest()
                return try self.getQuery(path, try QueryParams.parse(query, method: "get"))
            }
            if params["offset"] != nil || params["limit"] != nil {
                return try self.getPage(path, params, withMeta: withMeta)
            }
        }
        // With `meta`, the modSeq of the path's last key too (null for a computed key or one never set).
        let (value, modSeq) = withMeta ? try self.context.graph.meta(path) : (try self.context.graph.get(path), nil)
        let expires = withMeta ? self.context.graph.expiry(path) : nil
        try self.checkSettable(value, path: path)
        // A value that cannot fit the output limits is not encoded: the session is closed `slow_consumer` as when
        // its response is refused. Its encoding exists twice for a moment (the result, then the response in the
        // output), so it is counted twice: kvod holds at most the limit, not the limit and this value.
        guard session.admitsOutput(adding: value.jsonByteCountLowerBound &* 2) else { return }
        let seq = self.context.graph.seq
        self.writeResult {
            $0.append(contentsOf: #"{"value":"#.utf8)
            value.appendJSON(to: &$0)
            $0.append(contentsOf: #","seq":"#.utf8)
            JSONWriter.appendInt(Int64(seq), to: &$0)
            if withMeta {
                $0.append(contentsOf: #","modSeq":"#.utf8)
                if let modSeq { JSONWriter.appendInt(Int64(modSeq), to: &$0) } else { $0.append(contentsOf: "null".utf8) }
                $0.append(contentsOf: #","expires":"#.utf8)
                if let expires { JSONWriter.appendInt(Int64(expires), to: &$0) } else { $0.append(contentsOf: "null".utf8) }
            }
            $0.append(UInt8(ascii: "}"))
        }
    }

    /// `get` with `query`: the window and the match count (Protocol/methods.md#queries).
    private func getQuery(_ path: KeyPath, _ query: Query) throws {
        let result = try self.context.graph.query(path, query)
        let seq = self.context.graph.seq
        self.writeResult {
            $0.append(contentsOf: #"{"value":["#.utf8)
            for (index, element) in result.window.enumerated() {
                if index > 0 { $0.append(UInt8(ascii: ",")) }
                element.appendJSON(to: &$0)
            }
            $0.append(contentsOf: #"],"count":"#.utf8)
            JSONWriter.appendInt(Int64(result.count), to: &$0)
            $0.append(contentsOf: #","seq":"#.utf8)
            JSONWriter.appendInt(Int64(seq), to: &$0)
            $0.append(UInt8(ascii: "}"))
        }
    }

    /// `get` with `offset`/`limit`: a page of a collection and its count (Protocol/methods.md#get).
    /// With `meta`, the collection key's `modSeq` and `expires` too (read without exporting the collection).
    private func getPage(_ path: KeyPath, _ params: Params, withMeta: Bool) throws {
        let offset = params["offset"] == nil ? 0 : try params.integer("offset")
        let limit = params["limit"] == nil ? Int64.max : try params.integer("limit")
        guard offset >= 0, limit >= 0 else { throw RPCError.badParams("get: 'offset' and 'limit' must be 0 or more") }
        let (page, count) = try self.context.graph.page(path, offset: Int(offset), limit: Int(limit))
        try self.checkSettable(page, path: path)
        let modSeq = withMeta ? try self.context.graph.storedMeta(path).modSeq : nil
        let expires = withMeta ? self.context.graph.expiry(path) : nil
        let seq = self.context.graph.seq
        self.writeResult {
            $0.append(contentsOf: #"{"value":"#.utf8)
            page.appendJSON(to: &$0)
            $0.append(contentsOf: #","seq":"#.utf8)
            JSONWriter.appendInt(Int64(seq), to: &$0)
            $0.append(contentsOf: #","count":"#.utf8)
            JSONWriter.appendInt(Int64(count), to: &$0)
            if withMeta {
                $0.append(contentsOf: #","modSeq":"#.utf8)
                if let modSeq { JSONWriter.appendInt(Int64(modSeq), to: &$0) } else { $0.append(contentsOf: "null".utf8) }
                $0.append(contentsOf: #","expires":"#.utf8)
                if let expires { JSONWriter.appendInt(Int64(expires), to: &$0) } else { $0.append(contentsOf: "null".utf8) }
            }
            $0.append(UInt8(ascii: "}"))
        }
    }

    /// Throws 1009 when `value`, sent back in a `set`'s params, would be nested deeper than a request may be
    /// (`--max-json-depth`, which counts the request and its params: two levels): what `get` returns, `set` always
    /// takes. The graph can hold deeper values (a `set` at a long path, arrays under objects); their parts are read
    /// at deeper paths. An object by itself (the root, `$ID`) is never set whole: its keys each are, one level down.
    private func checkSettable(_ value: Value, path: KeyPath) throws(RPCError) {
        let limit = self.context.limits.maxJSONDepth - 2 + (path.keys.isEmpty ? 1 : 0)
        guard Self.nesting(of: value, exceeds: limit) else { return }
        throw RPCError(
            .limitExceeded,
            "get: the value at '\(path)' is nested deeper than \(limit) levels, more than a set takes: get a deeper path",
            data: .object(["limit": .int(Int64(limit))]))
    }

    /// Whether `value` as JSON nests arrays and objects more than `limit` deep (a scalar: 0). Stops at the limit.
    private static func nesting(of value: Value, exceeds limit: Int) -> Bool {
        switch value {
        case .null, .bool, .int, .double, .string: return false
        case .object: return limit < 1  // `{"$ref": ID}`
        case .array(let elements):
            guard limit >= 1 else { return true }
            return elements.contains { Self.nesting(of: $0, exceeds: limit - 1) }
        case .record(let record):
            guard limit >= 1 else { return true }
            return record.values.contains { Self.nesting(of: $0, exceeds: limit - 1) }
        }
    }

    func set(_ request: RPCRequest, on session: Session) throws {
        // The common params first: they have no `ttl`, so neither the clock nor a copy of the params is needed.
        if let set = MutationRequest.plainSetParams(request.params) {
            return try self.set(set, journaling: nil)
        }
        // A `ttl` becomes an absolute `expiresAt`, which is what is applied and journaled.
        let resolved = try MutationRequest.resolvingTTL(
            request.params, nowEpochMilliseconds: self.context.clock.epochMilliseconds)
        let set = try MutationRequest.parseSet(resolved)
        try self.set(set, journaling: set.expiresAt == nil ? nil : resolved)
    }

    /// Applies a set read from a request and writes its result; `journaling` replaces the request's params in the
    /// journal.
    @inline(__always)
    private func set(_ set: MutationRequest.SetParams, journaling params: JSONValue?) throws {
        // Notifications are queued on every connection inside this call, before the response (Dispatcher.swift).
        let result = try self.context.graph.set(
            self.keyPath(set.path), to: set.value, if: set.condition, expiresAt: set.expiresAt)
        self.committed(result.seq, params: params)
        self.writeSetResult(result)
    }

    /// A plain set read straight off the line (RPCPlainSet): `set` with only `path` and `value` (passed apart: a copy
    /// of the whole RPCPlainSet cost about 45 instructions). Returns the seq;
    /// writes a result only when it is more than `{"seq":N}` (`seqResultPrefix`), which the caller writes itself.
    func set(plainPath path: UnsafeRawBufferPointer, value: JSONValue) throws -> UInt64 {
        // Notifications are queued on every connection inside this call, before the response (Dispatcher.swift).
        let result = try self.context.graph.set(self.keyPath(plain: path), to: Value(json: value))
        if result.storedValue != nil { self.writeSetResult(result) }
        return result.seq
    }

    /// A mutation's usual result is this and the seq, then `}`.
    static var seqResultPrefix: StaticString { #"{"seq":"# }

    /// `{"seq":N}`, and `"value"` when validation stored something else than was sent (coerced, trimmed, a null
    /// replacement).
    private func writeSetResult(_ result: SetResult) {
        guard let stored = result.storedValue else {
            self.writeResult(objectPrefix: Self.seqResultPrefix, int: Int64(result.seq))
            return
        }
        self.writeResult {
            JSONWriter.appendLiteral(#"{"seq":"#, to: &$0)
            JSONWriter.appendInt(Int64(result.seq), to: &$0)
            $0.append(contentsOf: #","value":"#.utf8)
            stored.appendJSON(to: &$0)
            $0.append(UInt8(ascii: "}"))
        }
    }

    func validate(_ request: RPCRequest, on session: Session) throws {
        let params = Params(request.params, names: ["path", "value"], method: "validate")
        try params.rejectUnknown()
        let path = try self.keyPath(params.string("path"))
        let value = try self.context.graph.validate(path, Value(json: try params.required("value")))
        self.writeResult {
            $0.append(contentsOf: #"{"value":"#.utf8)
            value.appendJSON(to: &$0)
            $0.append(UInt8(ascii: "}"))
        }
    }
}
