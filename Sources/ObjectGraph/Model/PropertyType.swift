// The types a typed property can declare, and how a value is checked against one.

/// The declared type of a stored property.
public indirect enum PropertyType: Sendable, Equatable, CustomStringConvertible {
    /// Any value (the type of every key of an open object).
    case any
    case bool
    case int
    case double
    case string
    /// A to-one relationship to an object of the named class (`Object` is the open class).
    case object(String)
    /// An array whose elements have the given type (an ordered to-many relationship when they are objects).
    case array(PropertyType)
    /// An unordered collection without repeats (stored in insertion order; notified without indexes).
    case set(PropertyType)

    public var description: String {
        switch self {
        case .any: "any"
        case .bool: "bool"
        case .int: "int"
        case .double: "double"
        case .string: "string"
        case .object(let name): name
        case .array(let element): "[\(element)]"
        case .set(let element): "set<\(element)>"
        }
    }

    /// Parses `bool`, `int`, `double`, `string`, `any`, `[T]`, `array<T>`, `set<T>` or a class name.
    public init?(parsing text: String) {
        switch text {
        case "any": self = .any
        case "bool": self = .bool
        case "int": self = .int
        case "double": self = .double
        case "string": self = .string
        default:
            if text.hasPrefix("["), text.hasSuffix("]"), let element = PropertyType(parsing: String(text.dropFirst().dropLast())) {
                self = .array(element)
            } else if text.hasPrefix("set<"), text.hasSuffix(">"),
                let element = PropertyType(parsing: String(text.dropFirst(4).dropLast()))
            {
                self = .set(element)
            } else if text.hasPrefix("array<"), text.hasSuffix(">"),
                let element = PropertyType(parsing: String(text.dropFirst(6).dropLast()))
            {
                self = .array(element)
            } else if let first = text.unicodeScalars.first, first.properties.isAlphabetic,
                text.unicodeScalars.allSatisfy({ $0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" })
            {
                self = .object(text)
            } else {
                return nil
            }
        }
    }
}
