// One object in the graph: its identity, its class and its stored values. It knows nothing of observation; the
// graph changes it only inside a commit (Graph+Commit.swift) so that observers are told.

/// An object's class: whether any key may be set (open) or only declared ones (typed, the model layer).
public final class ObjectClass: Sendable {
    /// The class name shown by `describe`.
    public let name: String
    /// True when any key may be set on instances.
    public let isOpen: Bool

    public init(name: String, isOpen: Bool) {
        self.name = name
        self.isOpen = isOpen
    }

    /// The class of objects created from JSON objects and of the default root: any key, any value.
    public static let open = ObjectClass(name: "Object", isOpen: true)
}

/// An object in a graph. Loop-owned by whoever owns the graph.
final class GraphObject {
    let id: ObjectID
    let objectClass: ObjectClass
    /// Keys in the order they were first set.
    private(set) var keys: [String] = []
    private var storage: [String: Value] = [:]

    init(id: ObjectID, objectClass: ObjectClass) {
        self.id = id
        self.objectClass = objectClass
    }

    /// The stored value, or nil when the key was never set.
    @inline(__always)
    func value(forKey key: String) -> Value? {
        self.storage[key]
    }

    /// Stores a value; a new key goes to the end of the key order.
    func setValue(_ value: Value, forKey key: String) {
        if self.storage.updateValue(value, forKey: key) == nil {
            self.keys.append(key)
        }
    }

    /// The number of stored keys.
    var count: Int { self.keys.count }
}
