// To-many mutations and transactions over the wire (Protocol/methods.md#insert ... #transaction): `insert`,
// `remove`, `replace` by index (or by value for sets), the set mutations `union`, `minus`, `intersect`,
// `setMembers`, and `transaction`, which applies many of them (and `set`s) atomically with one seq.
import ObjectGraph
import ValueCoding
import WireProtocol

extension Dispatcher {
    /// The mutation methods a transaction may contain.
    static let mutationMethods: Set<String> = ["set", "insert", "remove", "replace", "union", "minus", "intersect", "setMembers"]

    func collectionMutation(_ request: RPCRequest, on connection: Connection) throws {
        let (path, mutation, condition) = try Self.parseMutation(method: request.method, request.params)
        let result = try self.server.graph.mutate(path, mutation, if: condition)
        self.server.countRequest(isMutation: true)
        self.writeSeq(result.seq)
    }

    func transaction(_ request: RPCRequest, on connection: Connection) throws {
        let params = Params(request.params, names: ["ops"], method: "transaction")
        try params.rejectUnknown()
        guard case .array(let items)? = params["ops"], !items.isEmpty else {
            throw RPCError.badParams("transaction: 'ops' must be a non-empty array of {method, params}")
        }
        if items.count > self.server.limits.maxBatchRequests {
            let limit = self.server.limits.maxBatchRequests
            throw RPCError(.limitExceeded, "transaction of \(items.count) ops exceeds \(limit)", data: .object(["limit": .int(Int64(limit))]))
        }
        var ops: [TransactionOp] = []
        for (index, item) in items.enumerated() {
            do {
                ops.append(try Self.parseOp(item))
            } catch let error as any RPCErrorConvertible {
                // An op that cannot be read fails the transaction, unless an earlier op would fail first.
                try self.server.graph.validateTransaction(ops)
                var rpc = error.rpcError
                var data: JSONObject
                if case .object(let object)? = rpc.data { data = object } else { data = JSONObject() }
                data["op"] = .int(Int64(index))
                rpc.data = .object(data)
                rpc.message = "op \(index): \(rpc.message)"
                throw rpc
            }
        }
        let seq = try self.server.graph.transaction(ops)
        self.server.countRequest(isMutation: true)
        self.writeSeq(seq)
    }

    private func writeSeq(_ seq: UInt64) {
        self.writeResult {
            $0.append(contentsOf: #"{"seq":"#.utf8)
            JSONWriter.appendInt(Int64(seq), to: &$0)
            $0.append(UInt8(ascii: "}"))
        }
    }

    /// `{method, params}` of a transaction op.
    static func parseOp(_ item: JSONValue) throws -> TransactionOp {
        guard case .object(let object) = item, case .string(let method)? = object["method"] else {
            throw RPCError.badParams("transaction: each op must be {\"method\": ..., \"params\": ...}")
        }
        if let unknown = object.keys.first(where: { $0 != "method" && $0 != "params" }) {
            throw RPCError.badParams("transaction: unknown member '\(unknown)' in an op")
        }
        guard Self.mutationMethods.contains(method) else {
            throw RPCError.badParams("transaction: '\(method)' is not a mutation method")
        }
        if method == "set" {
            let params = Params(object["params"], names: ["path", "value", "if"], method: "set")
            try params.rejectUnknown()
            let op = TransactionOp.set(try KeyPath(parsing: params.string("path")), Value(json: try params.required("value")))
            return try Self.parseCondition(params["if"], method: "set").map { .conditional($0, op) } ?? op
        }
        let (path, mutation, condition) = try Self.parseMutation(method: method, object["params"])
        return condition.map { .conditional($0, .mutate(path, mutation)) } ?? .mutate(path, mutation)
    }

    /// Performs one op outside a transaction (journal replay), as its request would.
    static func perform(_ op: TransactionOp, on graph: Graph) throws {
        switch op {
        case .set(let path, let value): try graph.set(path, to: value)
        case .mutate(let path, let mutation): try graph.mutate(path, mutation)
        case .conditional(let condition, .set(let path, let value)): try graph.set(path, to: value, if: condition)
        case .conditional(let condition, .mutate(let path, let mutation)): try graph.mutate(path, mutation, if: condition)
        case .conditional: try graph.transaction([op])
        }
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
