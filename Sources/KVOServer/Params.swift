// Reading a request's params, by name or by position (JSON-RPC allows both), with -32602 errors that say which
// parameter is wrong and why.
import WireProtocol

/// A request's params, read by name (object) or by position (array, in the method's documented order).
struct Params {
    private let value: JSONValue?
    private let names: [String]
    private let method: String

    init(_ value: JSONValue?, names: [String], method: String) {
        self.value = value
        self.names = names
        self.method = method
    }

    /// The number of parameters given (members of an object, elements of an array; 0 without params).
    var count: Int {
        switch self.value {
        case .object(let object)?: object.count
        case .array(let elements)?: elements.count
        default: 0
        }
    }

    /// The parameter, or nil when absent (a JSON null counts as present).
    subscript(name: String) -> JSONValue? {
        switch self.value {
        case .object(let object)?:
            return object[name]
        case .array(let elements)?:
            guard let index = self.names.firstIndex(of: name), index < elements.count else { return nil }
            return elements[index]
        default:
            return nil
        }
    }

    /// Throws -32602 when the params hold a member the method does not know, or more positions than it takes.
    func rejectUnknown() throws(RPCError) {
        switch self.value {
        case .object(let object)?:
            if let unknown = object.keys.first(where: { !self.names.contains($0) }) {
                throw RPCError.badParams("\(self.method): unknown parameter '\(unknown)'")
            }
        case .array(let elements)?:
            if elements.count > self.names.count {
                throw RPCError.badParams("\(self.method): takes at most \(self.names.count) parameters")
            }
        default:
            return
        }
    }

    func string(_ name: String) throws(RPCError) -> String {
        guard case .string(let text)? = self[name] else {
            throw RPCError.badParams("\(self.method): '\(name)' must be a string")
        }
        return text
    }

    func required(_ name: String) throws(RPCError) -> JSONValue {
        guard let value = self[name] else { throw RPCError.badParams("\(self.method): '\(name)' is required") }
        return value
    }

    func integer(_ name: String) throws(RPCError) -> Int64 {
        switch self[name] {
        case .int(let number)?: return number
        case .double(let number)? where number.rounded() == number && abs(number) < 9e15: return Int64(number)
        default: throw RPCError.badParams("\(self.method): '\(name)' must be an integer")
        }
    }
}
