// kvod's methods (Protocol/methods.md) as typed calls over `call`: each builds its params and reads its result.

public import WireProtocol

extension AsyncKVOClient {
    public func ping() async throws -> String {
        try await self.call("ping").stringValue ?? ""
    }

    /// The value at `path` (null when never set).
    public func get(_ path: String) async throws -> JSONValue {
        try await self.call("get", .object(["path": .string(path)]))["value"] ?? .null
    }

    /// A page of the to-many at `path`: the elements from `offset`, at most `limit` of them, and the collection's
    /// element count (Protocol/methods.md#get).
    public func page(_ path: String, offset: Int = 0, limit: Int) async throws -> (elements: [JSONValue], count: Int) {
        let result = try await self.call(
            "get", .object(["path": .string(path), "offset": .int(Int64(offset)), "limit": .int(Int64(limit))]))
        return (result["value"]?.arrayValue ?? [], Int(clamping: result["count"]?.intValue ?? 0))
    }

    /// The value with the seq that last stored its key (nil when never set or computed) and its deadline (Unix epoch
    /// milliseconds, nil without a ttl).
    public func getMeta(_ path: String) async throws -> (value: JSONValue, seq: UInt64, modSeq: UInt64?, expires: Int64?) {
        let result = try await self.call("get", .object(["path": .string(path), "meta": true]))
        return (
            result["value"] ?? .null, UInt64(clamping: result["seq"]?.intValue ?? 0),
            result["modSeq"]?.intValue.map { UInt64(clamping: $0) }, result["expires"]?.intValue
        )
    }

    /// A condition for a conditional write (Protocol/methods.md#set).
    public enum Condition: Sendable {
        /// Unchanged since this seq.
        case modSeq(UInt64)
        /// Currently equal to this value.
        case value(JSONValue)
        /// Null or never set.
        case absent

        var json: JSONValue {
            switch self {
            case .modSeq(let seq): .object(["modSeq": .int(Int64(clamping: seq))])
            case .value(let value): .object(["value": value])
            case .absent: .object(["absent": true])
            }
        }
    }

    /// Stores `value` at `path`; returns the mutation's seq. `ttl` (seconds): kvod sets the key to null when it
    /// passes. `condition`: a conditional write (`.server` 1011 when it does not hold).
    @discardableResult
    public func set(_ path: String, to value: JSONValue, ttl: Double? = nil, if condition: Condition? = nil)
        async throws -> UInt64
    {
        var params = JSONObject(["path": .string(path), "value": value])
        if let ttl { params["ttl"] = .double(ttl) }
        if let condition { params["if"] = condition.json }
        return try await self.seq(of: "set", params)
    }

    /// Appends `values` to the collection at `path` (or inserts them at `indexes`); returns the seq.
    @discardableResult
    public func insert(_ path: String, values: [JSONValue], at indexes: [Int]? = nil) async throws -> UInt64 {
        var params = JSONObject(["path": .string(path), "values": .array(values)])
        if let indexes { params["indexes"] = .array(indexes.map { .int(Int64($0)) }) }
        return try await self.seq(of: "insert", params)
    }

    /// Removes the elements at `indexes` of the ordered collection at `path`; returns the seq.
    @discardableResult
    public func remove(_ path: String, at indexes: [Int]) async throws -> UInt64 {
        try await self.seq(of: "remove", ["path": .string(path), "indexes": .array(indexes.map { .int(Int64($0)) })])
    }

    /// Replaces the elements at `indexes` with `values`; returns the seq.
    @discardableResult
    public func replace(_ path: String, at indexes: [Int], with values: [JSONValue]) async throws -> UInt64 {
        try await self.seq(
            of: "replace",
            ["path": .string(path), "indexes": .array(indexes.map { .int(Int64($0)) }), "values": .array(values)])
    }

    /// A set mutation (`union`, `minus`, `intersect`, `setMembers`) of the set at `path`; returns the seq.
    @discardableResult
    public func mutateSet(_ method: String, _ path: String, values: [JSONValue]) async throws -> UInt64 {
        try await self.seq(of: method, ["path": .string(path), "values": .array(values)])
    }

    /// Applies `{method, params}` ops atomically; returns the one seq.
    @discardableResult
    public func transaction(_ ops: [(method: String, params: JSONValue)]) async throws -> UInt64 {
        try await self.seq(
            of: "transaction",
            ["ops": .array(ops.map { .object(["method": .string($0.method), "params": $0.params]) })])
    }

    /// What `set` would store at `path`, or the validation error it would give.
    public func validate(_ path: String, _ value: JSONValue) async throws -> JSONValue {
        try await self.call("validate", .object(["path": .string(path), "value": value]))["value"] ?? .null
    }

    /// The model (without `path`), or the class and keys of the object at `path`.
    public func describe(_ path: String? = nil) async throws -> JSONValue {
        try await self.call("describe", .object(path.map { ["path": .string($0)] } ?? [:]))
    }

    /// Who observes what: every connection with its subscriptions (only those to `path` when given).
    public func observers(_ path: String? = nil) async throws -> JSONValue {
        try await self.call("observers", .object(path.map { ["path": .string($0)] } ?? [:]))
    }

    /// kvod's figures (Protocol/methods.md#stats).
    public func stats() async throws -> JSONValue {
        try await self.call("stats")
    }

    private func seq(of method: String, _ params: JSONObject) async throws -> UInt64 {
        UInt64(clamping: try await self.call(method, .object(params))["seq"]?.intValue ?? 0)
    }
}
