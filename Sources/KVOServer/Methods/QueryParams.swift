// The `query` parameter of `get` and `subscribe` (Protocol/methods.md#queries), read into the engine's `Query`:
//   {"where": "salary > $min", "vars": {"min": 100}, "orderBy": [{"key": "salary", "ascending": false}],
//    "offset": 0, "limit": 20, "select": ["name", "salary"]}
// every member optional. `orderBy` entries may also be strings: "salary" (ascending) or "-salary" (descending). A
// `where` that does not parse is 1013 with the column it stopped at; anything else malformed is -32602.
import ObjectGraph
import ValueCoding
import WireProtocol

enum QueryParams {
    static let names = ["where", "vars", "orderBy", "offset", "limit", "select"]

    /// The query in `value` (a JSON object).
    static func parse(_ value: JSONValue, method: String) throws(RPCError) -> Query {
        guard case .object(let object) = value else {
            throw RPCError.badParams("\(method): 'query' must be an object")
        }
        if let unknown = object.keys.first(where: { !Self.names.contains($0) }) {
            throw RPCError.badParams("\(method): unknown query member '\(unknown)'")
        }
        var query = Query()
        switch object["where"] {
        case nil, .null?: break
        case .string(let text)?:
            do {
                query.predicate = try Predicate(parsing: text)
            } catch {
                throw RPCError(
                    .invalidQuery, "\(method): 'where' column \(error.column): \(error.message)",
                    data: .object(["column": .int(Int64(error.column)), "reason": .string(error.message)]))
            }
        default: throw RPCError.badParams("\(method): 'where' must be a string (a predicate)")
        }
        switch object["vars"] {
        case nil, .null?: break
        case .object(let vars)?:
            for (name, value) in vars.members { query.variables[name] = Value(json: value) }
        default: throw RPCError.badParams("\(method): 'vars' must be an object of values")
        }
        switch object["orderBy"] {
        case nil, .null?: break
        case .array(let items)?:
            guard items.count <= Query.maxSortDescriptors else {
                throw RPCError.badParams("\(method): at most \(Query.maxSortDescriptors) sort descriptors")
            }
            query.orderBy = try items.map { (item) throws(RPCError) -> SortDescriptor in try Self.descriptor(item, method) }
        default: throw RPCError.badParams("\(method): 'orderBy' must be an array")
        }
        query.offset = try Self.count(object["offset"], "offset", method) ?? 0
        query.limit = try Self.count(object["limit"], "limit", method)
        switch object["select"] {
        case nil, .null?: break
        case .array(let items)?:
            guard items.count <= Query.maxSelect else {
                throw RPCError.badParams("\(method): at most \(Query.maxSelect) selected keys")
            }
            query.select = try items.map { (item) throws(RPCError) -> [String] in
                guard case .string(let text) = item else {
                    throw RPCError.badParams("\(method): 'select' must be an array of key paths")
                }
                return try Self.keys(text, "select", method)
            }
        default: throw RPCError.badParams("\(method): 'select' must be an array of key paths")
        }
        return query
    }

    private static func descriptor(_ item: JSONValue, _ method: String) throws(RPCError) -> SortDescriptor {
        switch item {
        case .string(let text):
            let descending = text.hasPrefix("-")
            return SortDescriptor(keys: try Self.keys(descending ? String(text.dropFirst()) : text, "orderBy", method), ascending: !descending)
        case .object(let object):
            if let unknown = object.keys.first(where: { !["key", "ascending", "caseInsensitive"].contains($0) }) {
                throw RPCError.badParams("\(method): unknown sort descriptor member '\(unknown)'")
            }
            guard case .string(let key)? = object["key"] else {
                throw RPCError.badParams("\(method): a sort descriptor needs a 'key'")
            }
            var descriptor = SortDescriptor(keys: try Self.keys(key, "orderBy", method))
            switch object["ascending"] {
            case nil: break
            case .bool(let flag)?: descriptor.ascending = flag
            default: throw RPCError.badParams("\(method): 'ascending' must be a boolean")
            }
            switch object["caseInsensitive"] {
            case nil: break
            case .bool(let flag)?: descriptor.caseInsensitive = flag
            default: throw RPCError.badParams("\(method): 'caseInsensitive' must be a boolean")
            }
            return descriptor
        default:
            throw RPCError.badParams("\(method): a sort descriptor is \"key\", \"-key\" or {\"key\", \"ascending\"}")
        }
    }

    /// An element's key path: keys separated by dots; `self` for the element itself.
    private static func keys(_ text: String, _ member: String, _ method: String) throws(RPCError) -> [String] {
        if text == "self" || text == "SELF" { return [] }
        let keys = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard !keys.isEmpty, keys.count <= Query.maxKeys, keys.allSatisfy({ !$0.isEmpty && $0.utf8.first != UInt8(ascii: "$") }) else {
            throw RPCError.badParams("\(method): '\(member)' has an invalid key path '\(text)'")
        }
        return keys
    }

    private static func count(_ value: JSONValue?, _ name: String, _ method: String) throws(RPCError) -> Int? {
        switch value {
        case nil, .null?: return nil
        case .int(let number)? where number >= 0: return Int(number)
        default: throw RPCError.badParams("\(method): '\(name)' must be an integer from 0")
        }
    }
}
