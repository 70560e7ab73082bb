// `get` and `set`: key-value coding over the wire (Protocol/methods.md#get, #set).
import ObjectGraph
import ValueCoding
import WireProtocol

extension Dispatcher {
    static let getParameterNames = ["path", "meta", "offset", "limit"]

    func get(_ request: RPCRequest, on session: Session) throws {
        let params = Params(request.params, names: Self.getParameterNames, method: "get")
        try params.rejectUnknown()
        let path = try self.keyPath(params.string("path"))
        let withMeta: Bool
        switch params["meta"] {
        case nil, .bool(false)?: withMeta = false
        case .bool(true)?: withMeta = true
        default: throw RPCError.badParams("get: 'meta' must be a boolean")
        }
        // A page of a to-many is read apart; a plain `{path}` does not even look for offset and limit.
        if Self.mayHavePage(request.params), let page = try Self.page(params) {
            return try self.getPage(path, offset: page.offset, limit: page.limit, withMeta: withMeta)
        }
        // With `meta`, the modSeq of the path's last key too (null for a computed key or one never set).
        let (value, modSeq) = withMeta ? try self.context.graph.meta(path) : (try self.context.graph.get(path), nil)
        let expires = withMeta ? self.context.graph.expiry(path) : nil
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

    /// `get` with `offset`/`limit`: only the page is exported (its objects written out), never the whole collection,
    /// with the collection's `count`.
    private func getPage(_ path: KeyPath, offset: Int, limit: Int, withMeta: Bool) throws {
        let (stored, modSeq) =
            withMeta ? try self.context.graph.storedMeta(path) : (try self.context.graph.value(at: path), nil)
        let value: Value
        let count: Int
        switch stored {
        case .null:
            (value, count) = (.array([]), 0)
        case .array(let elements):
            let start = min(offset, elements.count)
            let end = start + min(limit, elements.count - start)
            (value, count) = (self.context.graph.export(.array(Array(elements[start..<end]))), elements.count)
        default:
            throw GraphError.typeMismatch(
                path: path.description, reason: "offset and limit need a collection, not \(stored.typeName)")
        }
        let expires = withMeta ? self.context.graph.expiry(path) : nil
        self.writePageResult(value, count: count, meta: withMeta ? (modSeq, expires) : nil)
    }

    /// A page's result: `{"value":[...],"seq":N,"count":C}`, and `"modSeq"`, `"expires"` with `meta`.
    private func writePageResult(_ value: Value, count: Int, meta: (modSeq: UInt64?, expires: UInt64?)?) {
        var result = JSONObject(["value": value.jsonValue, "seq": .int(Int64(self.context.graph.seq))])
        result["count"] = .int(Int64(count))
        if let meta {
            result["modSeq"] = meta.modSeq.map { .int(Int64($0)) } ?? .null
            result["expires"] = meta.expires.map { .int(Int64($0)) } ?? .null
        }
        self.writeResult { JSONWriter.append(.object(result), to: &$0) }
    }

    /// Whether the params may hold `offset` or `limit`: more than `path` (and `meta`) by name, or more than two by
    /// position. Cheap, so that the plain `get` pays nothing for pages.
    private static func mayHavePage(_ params: JSONValue?) -> Bool {
        switch params {
        case .object(let object)?: object.count > 1
        case .array(let elements)?: elements.count > 2
        default: false
        }
    }

    /// `get`'s page of a to-many (`offset`, `limit`: integers from 0; either alone reads a page, `offset` from 0 and
    /// `limit` to the end by default), or nil when neither is given.
    static func page(_ params: Params) throws(RPCError) -> (offset: Int, limit: Int)? {
        guard params["offset"] != nil || params["limit"] != nil else { return nil }
        func bound(_ name: String, default fallback: Int) throws(RPCError) -> Int {
            guard params[name] != nil else { return fallback }
            let number: Int64
            do { number = try params.integer(name) } catch { throw RPCError.badParams("get: '\(name)' must be an integer from 0") }
            guard number >= 0 else { throw RPCError.badParams("get: '\(name)' must be an integer from 0") }
            return Int(clamping: number)
        }
        return (try bound("offset", default: 0), try bound("limit", default: Int.max))
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

    /// A plain set read straight off the line (RPCPlainSet): `set` with only `path` and `value`. Returns the seq;
    /// writes a result only when it is more than `{"seq":N}` (`seqResultPrefix`), which the caller writes itself.
    func set(_ set: RPCPlainSet) throws -> UInt64 {
        // Notifications are queued on every connection inside this call, before the response (Dispatcher.swift).
        let result = try self.context.graph.set(self.keyPath(plain: set.path), to: Value(json: set.value))
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
