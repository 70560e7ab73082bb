// A class of objects: its name, whether undeclared keys are allowed (open), and its declared properties. Classes
// are immutable once made; a Model (Model.swift) puts them together and checks them.

/// An object's class. Open classes accept any key (declared keys are still typed); typed classes only their own.
public final class ObjectClass: Sendable {
    /// The class name shown by `describe`.
    public let name: String
    /// True when keys that are not declared may be set (they hold any value).
    public let isOpen: Bool
    /// The declared properties, in declaration order.
    public let properties: [PropertyDescriptor]
    private let index: [String: Int]
    /// Whether a set of `key` notifies automatically (`automaticallyNotifiesObserversForKey:`); where it returns
    /// false, changes of the key are notified only by `willChangeValue`/`didChangeValue`.
    public let automaticallyNotifies: @Sendable (_ key: String) -> Bool

    public init(
        name: String, isOpen: Bool, properties: [PropertyDescriptor] = [],
        automaticallyNotifies: @escaping @Sendable (_ key: String) -> Bool = { _ in true }
    ) {
        self.name = name
        self.isOpen = isOpen
        self.properties = properties
        self.automaticallyNotifies = automaticallyNotifies
        var index: [String: Int] = [:]
        for (position, property) in properties.enumerated() { index[property.name] = position }
        self.index = index
    }

    /// The declared property named `key`, or nil.
    @inline(__always)
    public func property(_ key: String) -> PropertyDescriptor? {
        guard !self.index.isEmpty, let position = self.index[key] else { return nil }
        return self.properties[position]
    }

    /// The position of `key` among the declared properties, or nil.
    func declarationIndex(_ key: String) -> Int? {
        self.index.isEmpty ? nil : self.index[key]
    }

    /// The class of objects created from JSON objects in open slots, and of the default root: any key, any value.
    public static let open = ObjectClass(name: "Object", isOpen: true)
}
