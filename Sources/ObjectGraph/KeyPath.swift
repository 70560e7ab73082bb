// Key paths: `name`, `person.address.city`, and `$42.salary` (a path that starts at an object by id). Parsing is
// strict so that every later stage can trust the components.

/// A parsed key path: where it starts and the keys it follows.
public struct KeyPath: Hashable, Sendable, CustomStringConvertible {
    /// The object the path starts at (the root unless the text began with `$ID`).
    public var origin: ObjectID
    /// The keys, in order; empty means the origin object itself.
    public var keys: [String]

    public init(origin: ObjectID = .root, keys: [String]) {
        self.origin = origin
        self.keys = keys
    }

    /// Parses dotted text. An empty string is the root itself; `$ID` as the first component starts at that object.
    /// Keys may hold any character but `.`; a key may not be empty and may not start with `$`.
    /// The most keys a path may have (deeper paths are refused before anything is built from them).
    public static let maxKeys = 256

    public init(parsing text: String) throws(GraphError) {
        self.origin = .root
        self.keys = []
        if text.isEmpty { return }
        if text.utf8.count > Self.maxKeys * 2, text.utf8.lazy.filter({ $0 == UInt8(ascii: ".") }).count >= Self.maxKeys {
            throw GraphError.tooDeep(path: String(text.prefix(64)) + "…", limit: Self.maxKeys)
        }
        var first = true
        for component in text.split(separator: ".", omittingEmptySubsequences: false) {
            defer { first = false }
            if component.isEmpty {
                throw GraphError.invalidPath(path: text, reason: "empty key")
            }
            if component.utf8.first == UInt8(ascii: "$") {
                guard first, let id = Int(component.dropFirst()), id >= 0 else {
                    throw GraphError.invalidPath(
                        path: text, reason: "'$' may only start a path, followed by an object id")
                }
                self.origin = id
                continue
            }
            self.keys.append(String(component))
        }
    }

    /// The dotted text of the path (with `$ID` when it does not start at the root).
    public var description: String {
        let tail = self.keys.joined(separator: ".")
        if self.origin == .root { return tail }
        return tail.isEmpty ? "$\(self.origin)" : "$\(self.origin).\(tail)"
    }

    /// The text of the first `count` keys, for error messages.
    func prefixDescription(_ count: Int) -> String {
        KeyPath(origin: self.origin, keys: Array(self.keys.prefix(count))).description
    }
}
