// `get` and `set`: key-value coding over the wire (Protocol/methods.md#get, #set).
import ObjectGraph
import ValueCoding
import WireProtocol

extension Dispatcher {
    static let getParameterNames = ["path", "meta"]
    static let setParameterNames = ["path", "value", "if", "expiresAt"]

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

    func set(_ request: RPCRequest, on session: Session) throws {
        // The common request, `{"path": P, "value": V}` and nothing else, read without the general parameter reader.
        if case .object(let object)? = request.params, object.count == 2 {
            let pathFirst = object.keys[0] == "path"
            if pathFirst ? object.keys[1] == "value" : object.keys[0] == "value" && object.keys[1] == "path",
                case .string(let text) = object.values[pathFirst ? 0 : 1]
            {
                let result = try self.context.graph.set(
                    self.keyPath(text), to: Value(json: object.values[pathFirst ? 1 : 0]))
                self.committed(result.seq)
                self.writeSetResult(result)
                return
            }
        }
        // A `ttl` becomes an absolute `expiresAt`, which is what is applied and journaled.
        let resolved = try MutationRequest.resolvingTTL(
            request.params, nowEpochMilliseconds: self.context.clock.epochMilliseconds)
        let params = Params(resolved, names: Self.setParameterNames, method: "set")
        try params.rejectUnknown()
        let path = try self.keyPath(params.string("path"))
        let value = Value(json: try params.required("value"))
        let condition = try MutationRequest.parseCondition(params["if"], method: "set")
        let expiresAt = try MutationRequest.parseExpiresAt(params["expiresAt"])
        // Notifications are queued on every connection inside this call, before the response (Dispatcher.swift).
        let result = try self.context.graph.set(path, to: value, if: condition, expiresAt: expiresAt)
        self.committed(result.seq, params: expiresAt == nil ? nil : resolved)
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
