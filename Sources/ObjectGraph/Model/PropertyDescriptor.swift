// What a class declares about one key: stored (with type, default, null policy, validation, notification policy,
// side effects) or computed (a function of other key paths, with its dependencies).

/// When automatic notification happens for a stored property.
public enum NotificationPolicy: String, Sendable, Equatable {
    /// Every set notifies, even when the value is unchanged (automatic KVO).
    case always
    /// A set notifies only when the stored value really changed (the seeds' Listing 4).
    case onChange
    /// A set never notifies; the owner brackets changes with `willChangeValue`/`didChangeValue` (manual KVO).
    case manual
}

/// What a non-nullable property does when set to null (`setNilValueForKey:`).
public enum NullPolicy: Sendable, Equatable {
    /// Refuse with `nullNotAllowed` (1003).
    case reject
    /// Store this value instead (e.g. 0).
    case replace(Value)
}

/// A change that setting a property makes to another key of the same object, inside the same change bracket
/// (the seeds' nested will/did: `openingBalance` also increments `itemChanged`).
public enum SideEffect: Sendable, Equatable {
    /// Adds `by` to the integer at `key`.
    case increment(key: String, by: Int64)
}

/// A stored property of a typed class.
public struct StoredProperty: Sendable {
    public var type: PropertyType
    /// The value a new object starts with. For a class-typed property, a record (even empty) creates an object.
    public var defaultValue: Value
    public var isNullable: Bool
    public var nullPolicy: NullPolicy
    public var rules: [ValidationRule]
    public var notification: NotificationPolicy
    public var sideEffects: [SideEffect]
    /// A validation function (`validate<Key>:error:`): returns the value to store or throws a reason.
    public var validator: (@Sendable (Value) throws(ValidationFailure) -> Value)?

    public init(
        type: PropertyType, defaultValue: Value = .null, isNullable: Bool = true, nullPolicy: NullPolicy = .reject,
        rules: [ValidationRule] = [], notification: NotificationPolicy = .always, sideEffects: [SideEffect] = [],
        validator: (@Sendable (Value) throws(ValidationFailure) -> Value)? = nil
    ) {
        self.type = type
        self.defaultValue = defaultValue
        self.isNullable = isNullable
        self.nullPolicy = nullPolicy
        self.rules = rules
        self.notification = notification
        self.sideEffects = sideEffects
        self.validator = validator
    }
}

/// A computed (read-only) property: a function of key paths of the same object.
public struct ComputedProperty: Sendable {
    /// The key paths (relative to the object) whose changes change this key: the expression's own paths plus any
    /// declared with `affectedBy` (`keyPathsForValuesAffecting<Key>`).
    public var dependencies: [String]
    /// The source text, when the property came from an expression (for `describe`).
    public var expressionText: String?
    /// Computes the value; `read` gives the current value of a key path relative to the object.
    public var evaluate: @Sendable (_ read: (String) -> Value) -> Value

    public init(
        dependencies: [String], expressionText: String? = nil,
        evaluate: @escaping @Sendable (_ read: (String) -> Value) -> Value
    ) {
        self.dependencies = dependencies
        self.expressionText = expressionText
        self.evaluate = evaluate
    }
}

/// One declared key of a class.
public struct PropertyDescriptor: Sendable {
    public enum Kind: Sendable {
        case stored(StoredProperty)
        case computed(ComputedProperty)
    }

    public var name: String
    public var kind: Kind

    public init(name: String, kind: Kind) {
        self.name = name
        self.kind = kind
    }

    /// A stored property.
    public static func stored(_ name: String, _ property: StoredProperty) -> PropertyDescriptor {
        PropertyDescriptor(name: name, kind: .stored(property))
    }

    /// A computed property from a Swift closure with declared dependencies.
    public static func computed(
        _ name: String, dependsOn dependencies: [String],
        _ evaluate: @escaping @Sendable (_ read: (String) -> Value) -> Value
    ) -> PropertyDescriptor {
        PropertyDescriptor(name: name, kind: .computed(ComputedProperty(dependencies: dependencies, evaluate: evaluate)))
    }

    var stored: StoredProperty? {
        if case .stored(let property) = self.kind { return property }
        return nil
    }

    var computed: ComputedProperty? {
        if case .computed(let property) = self.kind { return property }
        return nil
    }
}
