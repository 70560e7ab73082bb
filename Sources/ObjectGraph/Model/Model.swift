// A model: the classes of a graph and the class of its root, checked as a whole when made: every class a property
// names exists, defaults and rules fit their types, computed keys' dependencies name real keys and form no cycle,
// and default objects do not nest forever.

/// Why a model was refused: which field and what is wrong.
public struct ModelError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Where, as a dotted field path (`classes.LabColor.properties.color.expression`).
    public var field: String
    public var message: String

    public init(field: String, _ message: String) {
        self.field = field
        self.message = message
    }

    public var description: String { "\(self.field): \(self.message)" }
}

/// The classes of a graph and which one is the root's.
public struct Model: Sendable {
    /// The classes by name (the open class `Object` included).
    public let classes: [String: ObjectClass]
    /// The class names in declaration order.
    public let classNames: [String]
    /// The root object's class.
    public let root: ObjectClass

    /// A model of one open root and no other classes: any key, any value.
    public static let open = try! Model(root: .open, classes: [])  // invariant: an open root has nothing to check

    /// Puts classes together and checks them. `root` may be one of `classes` or an extra class.
    public init(root: ObjectClass, classes: [ObjectClass]) throws(ModelError) {
        var byName: [String: ObjectClass] = ["Object": .open]
        var names: [String] = []
        for objectClass in classes + (classes.contains { $0 === root } ? [] : [root]) {
            if objectClass === ObjectClass.open { continue }
            try Self.checkClassName(objectClass.name)
            guard byName[objectClass.name] == nil else {
                throw ModelError(field: "classes.\(objectClass.name)", "class '\(objectClass.name)' is declared twice")
            }
            byName[objectClass.name] = objectClass
            names.append(objectClass.name)
        }
        self.classes = byName
        self.classNames = names
        self.root = root
        try self.check()
    }

    /// The class a property type names, or nil for non-object types.
    func objectClass(for type: PropertyType) -> ObjectClass? {
        if case .object(let name) = type { return self.classes[name] }
        return nil
    }

    // MARK: - Checks

    private func check() throws(ModelError) {
        for objectClass in self.orderedClasses {
            for property in objectClass.properties {
                let field = "classes.\(objectClass.name).properties.\(property.name)"
                try Self.checkKey(property.name, field: field)
                switch property.kind {
                case .stored(let stored): try self.checkStored(stored, of: objectClass, field: field)
                case .computed(let computed): try self.checkDependencies(computed, of: objectClass, field: field)
                }
            }
        }
        try self.checkDependencyCycles()
        try self.checkDefaultNesting()
    }

    static func checkClassName(_ name: String) throws(ModelError) {
        if name.isEmpty || PropertyType(parsing: name) != .object(name) {
            throw ModelError(field: "classes.\(name)", "'\(name)' cannot be a class name (an identifier, not a built-in type)")
        }
    }

    static func checkKey(_ key: String, field: String) throws(ModelError) {
        if key.isEmpty || key.utf8.contains(UInt8(ascii: ".")) || key.utf8.first == UInt8(ascii: "$")
            || key.utf8.first == UInt8(ascii: "@")
        {
            throw ModelError(field: field, "'\(key)' cannot be a key (empty, contains '.', or starts with '$' or '@')")
        }
    }

    /// The classes in declaration order (the root first when it is not declared): checks report the same error on
    /// every run.
    private var orderedClasses: [ObjectClass] {
        self.classNames.compactMap { self.classes[$0] }
    }

    private func checkStored(_ stored: StoredProperty, of objectClass: ObjectClass, field: String) throws(ModelError) {
        var type = stored.type
        while true {
            if case .array(let element) = type { type = element; continue }
            if case .set(let element) = type { type = element; continue }
            break
        }
        if case .object(let name) = type, self.classes[name] == nil {
            throw ModelError(field: "\(field).type", "unknown class '\(name)'")
        }
        if case .replace(let replacement) = stored.nullPolicy, replacement.isNull {
            throw ModelError(field: "\(field).nullValue", "the replacement for null cannot be null")
        }
        for rule in stored.rules {
            if case .pattern(let pattern) = rule, (try? Regex(pattern)) == nil {
                throw ModelError(field: "\(field).pattern", "invalid regular expression \(pattern)")
            }
        }
        if self.objectClass(for: stored.type) != nil, !stored.defaultValue.isNull {
            guard case .record = stored.defaultValue else {
                throw ModelError(field: "\(field).default", "the default of an object property is {} (a new object) or null")
            }
        }
        if case .replace(let replacement) = stored.nullPolicy, self.objectClass(for: stored.type) == nil {
            do {
                _ = try stored.type.coerce(replacement)
            } catch {
                throw ModelError(field: "\(field).nullValue", "the replacement for null does not fit the type: \(error.reason)")
            }
        }
        if !stored.defaultValue.isNull && self.objectClass(for: stored.type) == nil {
            do {
                _ = try stored.type.coerce(stored.defaultValue)
            } catch {
                throw ModelError(field: "\(field).default", "default does not fit the type: \(error.reason)")
            }
        }
        for case .increment(let key, _) in stored.sideEffects {
            guard let target = objectClass.property(key)?.stored, target.type == .int else {
                throw ModelError(field: "\(field).increments", "'\(key)' is not a stored int property of \(objectClass.name)")
            }
        }
    }

    /// Each dependency's first keys must exist on typed classes (open classes accept anything).
    private func checkDependencies(
        _ computed: ComputedProperty, of objectClass: ObjectClass, field: String
    ) throws(ModelError) {
        for dependency in computed.dependencies {
            var current: ObjectClass? = objectClass
            for key in dependency.split(separator: ".").map(String.init) {
                guard let owner = current else { break }  // through an open or untyped value: not checked
                if key.hasPrefix("@") { break }  // collection operators: checked by their evaluation
                guard let property = owner.property(key) else {
                    if owner.isOpen { break }
                    throw ModelError(
                        field: "\(field).dependencies", "'\(dependency)' names '\(key)', which \(owner.name) does not declare")
                }
                current = property.stored.flatMap { self.objectClass(for: $0.type) }
            }
        }
    }

    /// A computed key may not depend on itself through other computed keys (checked per class and through to-one
    /// relationships whose class is declared).
    private func checkDependencyCycles() throws(ModelError) {
        struct Node: Hashable { let className: String; let key: String }
        var edges: [Node: [Node]] = [:]
        for objectClass in self.orderedClasses {
            for property in objectClass.properties {
                guard let computed = property.computed else { continue }
                let node = Node(className: objectClass.name, key: property.name)
                for dependency in computed.dependencies {
                    var current: ObjectClass? = objectClass
                    for key in dependency.split(separator: ".").map(String.init) {
                        guard let owner = current, !key.hasPrefix("@"), let target = owner.property(key) else { break }
                        if target.computed != nil { edges[node, default: []].append(Node(className: owner.name, key: key)) }
                        current = target.stored.flatMap { self.objectClass(for: $0.type) }
                    }
                }
            }
        }
        var state: [Node: Bool] = [:]  // false: on the stack, true: done
        func visit(_ node: Node, _ trail: [Node]) throws(ModelError) {
            if state[node] == true { return }
            if state[node] == false {
                let cycle = (trail.drop { $0 != node } + [node]).map { "\($0.className).\($0.key)" }
                throw ModelError(
                    field: "classes.\(node.className).properties.\(node.key)",
                    "dependency cycle: \(cycle.joined(separator: " -> "))")
            }
            state[node] = false
            for next in edges[node] ?? [] { try visit(next, trail + [node]) }
            state[node] = true
        }
        for node in edges.keys.sorted(by: { ($0.className, $0.key) < ($1.className, $1.key) }) { try visit(node, []) }
    }

    /// Default objects (class-typed properties with a default) must not nest forever (A has a default B which has a
    /// default A ...).
    private func checkDefaultNesting() throws(ModelError) {
        func visit(_ objectClass: ObjectClass, _ trail: [String]) throws(ModelError) {
            if trail.contains(objectClass.name) {
                throw ModelError(
                    field: "classes.\(objectClass.name)",
                    "default objects nest forever: \((trail + [objectClass.name]).joined(separator: " -> "))")
            }
            for property in objectClass.properties {
                guard let stored = property.stored, case .record = stored.defaultValue,
                    let target = self.objectClass(for: stored.type)
                else { continue }
                try visit(target, trail + [objectClass.name])
            }
        }
        for objectClass in self.orderedClasses { try visit(objectClass, []) }
    }
}
