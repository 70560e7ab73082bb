// Reading mutation requests (Protocol/methods.md#set ... #transaction) into engine operations, written once for
// the dispatcher and for journal replay (crash recovery applies each journaled request exactly as it was parsed
// when it was first served).
import ObjectGraph
import ValueCoding
import WireProtocol

/// The parsers of mutation requests.
enum MutationRequest {
    /// The mutation methods a transaction may contain.
    static let methods: Set<String> = ["set", "insert", "remove", "replace", "union", "minus", "intersect", "setMembers"]

    /// Applies one journaled mutation request (a transaction included) to `graph`, parsed exactly as when it was
    /// served.
    static func replay(method: String, params: JSONValue?, into graph: Graph) throws {
        guard method == "transaction" else {
            var op = JSONObject(["method": .string(method)])
            op["params"] = params
            try Self.perform(try Self.parseOp(.object(op)), on: graph)
            return
        }
        let params = Params(params, names: ["ops"], method: "transaction")
        guard case .array(let items)? = params["ops"] else { throw RPCError.badParams("a transaction without ops") }
        try graph.transaction(items.map(Self.parseOp))
    }

    /// `{method, params}` of a transaction op.
    static func parseOp(_ item: JSONValue) throws -> TransactionOp {
        guard case .object(let object) = item, case .string(let method)? = object["method"] else {
            throw RPCError.badParams("transaction: each op must be {\"method\": ..., \"params\": ...}")
        }
        if let unknown = object.keys.first(where: { $0 != "method" && $0 != "params" }) {
            throw RPCError.badParams("transaction: unknown member '\(unknown)' in an op")
        }
        guard Self.methods.contains(method) else {
            throw RPCError.badParams("transaction: '\(method)' is not a mutation method")
        }
        if method == "set" {
            let set = try Self.parseSet(object["params"])
            let op = TransactionOp.set(try KeyPath(parsing: set.path), set.value, expiresAt: set.expiresAt)
            return set.condition.map { .conditional($0, op) } ?? op
        }
        let (path, mutation, condition) = try Self.parseMutation(method: method, object["params"])
        return condition.map { .conditional($0, .mutate(path, mutation)) } ?? .mutate(path, mutation)
    }

    /// Performs one op outside a transaction (journal replay), as its request would.
    static func perform(_ op: TransactionOp, on graph: Graph) throws {
        switch op {
        case .set(let path, let value, let expiresAt): try graph.set(path, to: value, expiresAt: expiresAt)
        case .mutate(let path, let mutation): try graph.mutate(path, mutation)
        case .conditional(let condition, .set(let path, let value, let expiresAt)):
            try graph.set(path, to: value, if: condition, expiresAt: expiresAt)
        case .conditional(let condition, .mutate(let path, let mutation)): try graph.mutate(path, mutation, if: condition)
        case .conditional: try graph.transaction([op])
        }
    }

    /// A `set`'s params, read and checked (Protocol/methods.md#set).
    struct SetParams {
        /// The path as sent; the caller parses it (the dispatcher through its cache).
        var path: String
        var value: Value
        var condition: WriteCondition?
        /// Unix epoch milliseconds; a `ttl` must have been made absolute first (`resolvingTTL`).
        var expiresAt: UInt64?
    }

    /// The params a `set` takes, in their positional order.
    static let setParameterNames = ["path", "value", "if", "expiresAt"]

    /// Reads a `set`'s params, for a request, a transaction op and journal replay alike; throws -32602 as `Params`.
    static func parseSet(_ raw: JSONValue?) throws(RPCError) -> SetParams {
        if let plain = Self.plainSetParams(raw) { return plain }
        let params = Params(raw, names: Self.setParameterNames, method: "set")
        try params.rejectUnknown()
        return SetParams(
            path: try params.string("path"), value: Value(json: try params.required("value")),
            condition: try Self.parseCondition(params["if"], method: "set"),
            expiresAt: try Self.parseExpiresAt(params["expiresAt"]))
    }

    /// The common params, `{"path": P, "value": V}` and nothing else, read without the general parameter reader; nil
    /// for anything else (for `parseSet` to read).
    @inline(__always)
    static func plainSetParams(_ raw: JSONValue?) -> SetParams? {
        guard case .object(let object)? = raw, object.count == 2 else { return nil }
        let pathFirst = object.keys[0] == "path"
        guard pathFirst ? object.keys[1] == "value" : object.keys[0] == "value" && object.keys[1] == "path",
            case .string(let text) = object.values[pathFirst ? 0 : 1]
        else { return nil }
        return SetParams(path: text, value: Value(json: object.values[pathFirst ? 1 : 0]))
    }

    /// The longest `ttl`: one year, in seconds.
    static let maxTTLSeconds = 31_536_000

    /// A set's `expiresAt` (Unix epoch milliseconds), the absolute form of `ttl` that the journal keeps.
    static func parseExpiresAt(_ raw: JSONValue?) throws(RPCError) -> UInt64? {
        switch raw {
        case nil, .null?: return nil
        case .int(let milliseconds)? where milliseconds > 0: return UInt64(milliseconds)
        default: throw RPCError.badParams("set: 'expiresAt' must be a positive integer (Unix epoch milliseconds)")
        }
    }

    /// A set's params with `ttl` (seconds from now) turned into `expiresAt` (epoch milliseconds, `now` plus the ttl),
    /// so that what is applied and journaled is absolute and replays alike after a restart. Unchanged without `ttl`.
    /// An `expiresAt` sent as such gets `ttl`'s cap: at most one year after `now` (checked here, for requests only:
    /// a journaled deadline replays whenever the restart comes). `now` is read only when there is a `ttl` or an
    /// `expiresAt` (the clock is a system call).
    static func resolvingTTL(
        _ raw: JSONValue?, nowEpochMilliseconds now: @autoclosure () -> UInt64
    ) throws(RPCError) -> JSONValue? {
        guard case .object(var object)? = raw else { return raw }
        guard let ttl = object["ttl"] else {
            if case .int(let milliseconds)? = object["expiresAt"], milliseconds > 0,
                UInt64(milliseconds) > now() &+ UInt64(Self.maxTTLSeconds) * 1000
            {
                throw RPCError.badParams(
                    "set: 'expiresAt' may be at most one year (\(Self.maxTTLSeconds) s) ahead, as 'ttl'")
            }
            return raw
        }
        let seconds: Double
        switch ttl {
        case .int(let value): seconds = Double(value)
        case .double(let value): seconds = value
        default: seconds = -1
        }
        guard seconds > 0, seconds <= Double(Self.maxTTLSeconds) else {
            throw RPCError.badParams("set: 'ttl' must be a number of seconds above 0 and at most \(Self.maxTTLSeconds)")
        }
        if object["expiresAt"] != nil { throw RPCError.badParams("set: give 'ttl' or 'expiresAt', not both") }
        object["ttl"] = nil
        object["expiresAt"] = .int(Int64(now() + UInt64((seconds * 1000).rounded(.up))))
        return .object(object)
    }

    /// A transaction's params with every set op's `ttl` resolved (see `resolvingTTL`).
    static func resolvingTTLs(inTransaction raw: JSONValue?, nowEpochMilliseconds now: UInt64) throws(RPCError) -> JSONValue? {
        guard case .object(var object)? = raw, case .array(var ops)? = object["ops"] else { return raw }
        var changed = false
        for index in ops.indices {
            guard case .object(var op) = ops[index], op["method"] == .string("set"), let params = op["params"] else {
                continue
            }
            let resolved = try Self.resolvingTTL(params, nowEpochMilliseconds: now)
            if resolved != params {
                op["params"] = resolved
                ops[index] = .object(op)
                changed = true
            }
        }
        guard changed else { return raw }
        object["ops"] = .array(ops)
        return .object(object)
    }

    /// The `if` param of a write (Protocol/methods.md#set): `{"modSeq": M}`, `{"value": V}` or `{"absent": true}`.
    static func parseCondition(_ raw: JSONValue?, method: String) throws(RPCError) -> WriteCondition? {
        guard let raw else { return nil }
        let shapes = "'if' must be {\"modSeq\": SEQ}, {\"value\": VALUE} or {\"absent\": true}"
        guard case .object(let object) = raw, object.keys.count == 1, let name = object.keys.first else {
            throw RPCError.badParams("\(method): \(shapes)")
        }
        switch (name, object[name]) {
        case ("modSeq", .int(let seq)?) where seq >= 0: return .modSeq(UInt64(seq))
        case ("value", let value?): return .value(Value(json: value))
        case ("absent", .bool(true)?): return .absent
        default: throw RPCError.badParams("\(method): \(shapes)")
        }
    }

    /// Reads a collection mutation's params: `{path, index, value}` / `{path, indexes, values}` for ordered
    /// collections; `{path, values}` by value for sets (and `insert` without indexes appends).
    static func parseMutation(
        method: String, _ raw: JSONValue?
    ) throws -> (KeyPath, CollectionMutation, WriteCondition?) {
        let (path, mutation, params) = try Self.parseMutationParams(method: method, raw)
        return (path, mutation, try Self.parseCondition(params["if"], method: method))
    }

    private static func parseMutationParams(
        method: String, _ raw: JSONValue?
    ) throws -> (KeyPath, CollectionMutation, Params) {
        let names: [String]
        switch method {
        case "remove": names = ["path", "index", "indexes", "values", "if"]
        case "union", "minus", "intersect", "setMembers": names = ["path", "values", "if"]
        default: names = ["path", "index", "value", "indexes", "values", "if"]
        }
        let params = Params(raw, names: names, method: method)
        try params.rejectUnknown()
        let path = try KeyPath(parsing: params.string("path"))
        let indexes = try Self.indexes(params, method)
        let values = try Self.values(params, method)
        switch method {
        case "insert":
            guard let values else { throw RPCError.badParams("insert: 'value' or 'values' is required") }
            if let indexes { return (path, .insert(indexes: indexes, values: values), params) }
            return (path, .append(values), params)
        case "remove":
            if let indexes {
                if values != nil { throw RPCError.badParams("remove: give 'index'/'indexes' or 'values', not both") }
                return (path, .remove(indexes: indexes), params)
            }
            guard let values else { throw RPCError.badParams("remove: 'index', 'indexes' or 'values' is required") }
            return (path, .minus(values), params)
        case "replace":
            guard let indexes, let values else { throw RPCError.badParams("replace: 'index'/'indexes' and 'value'/'values' are required") }
            return (path, .replace(indexes: indexes, values: values), params)
        default:
            guard let values else { throw RPCError.badParams("\(method): 'values' is required") }
            switch method {
            case "union": return (path, .union(values), params)
            case "minus": return (path, .minus(values), params)
            case "intersect": return (path, .intersect(values), params)
            default: return (path, .setMembers(values), params)
            }
        }
    }

    private static func indexes(_ params: Params, _ method: String) throws(RPCError) -> [Int]? {
        switch (params["index"], params["indexes"]) {
        case (nil, nil): return nil
        case (let single?, nil):
            guard case .int(let index) = single, let exact = Int(exactly: index) else {
                throw RPCError.badParams("\(method): 'index' must be an integer")
            }
            return [exact]
        case (nil, .array(let items)?):
            var result: [Int] = []
            for item in items {
                guard case .int(let index) = item, let exact = Int(exactly: index) else {
                    throw RPCError.badParams("\(method): 'indexes' must be an array of integers")
                }
                result.append(exact)
            }
            return result
        case (nil, _?): throw RPCError.badParams("\(method): 'indexes' must be an array of integers")
        default: throw RPCError.badParams("\(method): give 'index' or 'indexes', not both")
        }
    }

    private static func values(_ params: Params, _ method: String) throws(RPCError) -> [Value]? {
        switch (params["value"], params["values"]) {
        case (nil, nil): return nil
        case (let single?, nil): return [Value(json: single)]
        case (nil, .array(let items)?): return items.map(Value.init(json:))
        case (nil, _?): throw RPCError.badParams("\(method): 'values' must be an array")
        default: throw RPCError.badParams("\(method): give 'value' or 'values', not both")
        }
    }
}
