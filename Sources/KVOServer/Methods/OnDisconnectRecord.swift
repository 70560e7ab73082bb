// The journal records of `onDisconnect` registrations (Protocol/methods.md#ondisconnect, docs/DURABILITY.md), written
// and read here next to the mutation parsers: they take no seq, and replaying them changes no graph. Replay folds
// them into `OnDisconnectRegistrations`; what is left at the end are the registrations of connections that were open
// when kvod stopped without closing them (a crash).
import WireProtocol

/// One journaled registration change: `onDisconnect {"connection": ID, "ops": [...]}` (ops as registered, `ttl`
/// unresolved; `[]` cancels) or `disconnected {"connection": ID}` (the connection ended; its ops ran then, journaled
/// as the transaction that follows).
enum OnDisconnectRecord: Equatable, Sendable {
    case registered(connection: String, ops: [JSONValue])
    case disconnected(connection: String)

    static let registeredMethod = "onDisconnect"
    static let disconnectedMethod = "disconnected"

    /// Whether a journal record of `method` is one of these (they take no seq).
    static func isRecord(method: String) -> Bool {
        method == Self.registeredMethod || method == Self.disconnectedMethod
    }

    /// Reads a journaled record; nil when `method` is not one of these.
    /// - Throws: `RPCError` when the params do not have the shape written by `params`.
    init?(method: String, params: JSONValue?) throws(RPCError) {
        guard Self.isRecord(method: method) else { return nil }
        guard case .object(let object)? = params, case .string(let connection)? = object["connection"] else {
            throw RPCError.badParams("\(method) record without a 'connection' string")
        }
        if method == Self.disconnectedMethod {
            self = .disconnected(connection: connection)
            return
        }
        guard case .array(let ops)? = object["ops"] else {
            throw RPCError.badParams("\(method) record without an 'ops' array")
        }
        self = .registered(connection: connection, ops: ops)
    }

    /// The journal method.
    var method: String {
        switch self {
        case .registered: Self.registeredMethod
        case .disconnected: Self.disconnectedMethod
        }
    }

    /// The journal params.
    var params: JSONValue {
        switch self {
        case .registered(let connection, let ops): .object(["connection": .string(connection), "ops": .array(ops)])
        case .disconnected(let connection): .object(["connection": .string(connection)])
        }
    }
}

/// The live `onDisconnect` registrations by connection, in the order they were first made: what Durability carries
/// across a journal roll, and what replaying a journal leaves for the next start to run.
public struct OnDisconnectRegistrations: Equatable, Sendable {
    /// The ops by connection, with the number of the registration that made the entry (for the order).
    private var entries: [String: (number: Int, ops: [JSONValue])] = [:]
    private var made = 0

    /// None.
    public init() {}

    public var isEmpty: Bool { self.entries.isEmpty }
    public var count: Int { self.entries.count }

    /// Every live registration as the record that makes it, oldest first.
    var records: [OnDisconnectRecord] {
        self.entries.sorted { $0.value.number < $1.value.number }
            .map { .registered(connection: $0.key, ops: $0.value.ops) }
    }

    /// Every live registration as (connection, ops), oldest first.
    var lostConnections: [(connection: String, ops: [JSONValue])] {
        self.records.compactMap {
            guard case .registered(let connection, let ops) = $0 else { return nil }
            return (connection, ops)
        }
    }

    /// The ops registered for `connection`, or nil.
    func ops(of connection: String) -> [JSONValue]? { self.entries[connection]?.ops }

    /// The set as JSON, oldest first: `[{"connection": ID, "ops": [...]}, ...]` (what a leader's catch-up sends a
    /// follower: the `registrations` line, docs/SCALING.md#presence-across-a-failover).
    var json: JSONValue {
        .array(self.lostConnections.map { .object(["connection": .string($0.connection), "ops": .array($0.ops)]) })
    }

    /// Reads `json`'s form.
    /// - Throws: `RPCError` when an item is not `{connection, ops}`.
    init(json: JSONValue) throws(RPCError) {
        self.init()
        guard case .array(let items) = json else { throw RPCError.badParams("registrations: not an array") }
        for item in items {
            guard let record = try OnDisconnectRecord(method: OnDisconnectRecord.registeredMethod, params: item) else {
                continue
            }
            self.apply(record)
        }
    }

    /// Applies one record: a registration replaces the connection's earlier one, `[]` or `disconnected` removes it.
    /// Returns whether the connection had a registration before.
    @discardableResult
    mutating func apply(_ record: OnDisconnectRecord) -> Bool {
        switch record {
        case .registered(let connection, let ops) where !ops.isEmpty:
            if let number = self.entries[connection]?.number {
                self.entries[connection] = (number, ops)
                return true
            }
            self.made += 1
            self.entries[connection] = (self.made, ops)
            return false
        case .registered(let connection, _), .disconnected(let connection):
            return self.entries.removeValue(forKey: connection) != nil
        }
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.records == rhs.records }
}
