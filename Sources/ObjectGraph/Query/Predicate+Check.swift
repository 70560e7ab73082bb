// The strict check of a predicate before a query uses it: its key paths against the declared classes (as `get`
// checks a path), and its variables against the request's. Evaluation itself is lenient and never fails.

extension Graph {
    /// Checks `predicate` for a query on the collection at `path` whose elements are of `elementClass` (nil: open, or
    /// scalars: no key to check).
    ///
    /// - Throws: `undefinedKey` (1001) for a key a typed class does not declare, with the collection's path and the
    ///   predicate's keys up to it (`team.members.salry`); `typeMismatch` for a key applied to a declared scalar or a
    ///   collection operator applied to a declared non-collection; `invalidArgument` for a `$NAME` the request does
    ///   not bind, a variable LIKE or MATCHES pattern that is not a string or does not compile, and a variable
    ///   BETWEEN range that is not an array of two values. Keys behind an open class, an `any` or a computed key are
    ///   not checked (they may exist on each object).
    func checkPredicate(
        _ predicate: Predicate, elementClass: ObjectClass?, variables: [String: Value], path: KeyPath
    ) throws(GraphError) {
        if let elementClass {
            for keys in predicate.keyPaths { try self.checkKeys(keys, from: elementClass, path: path) }
        }
        for name in predicate.variables.sorted() where variables[name] == nil {
            throw GraphError.invalidArgument(path: path.description, reason: "no value for the variable $\(name)")
        }
        var failure: GraphError?
        predicate.forEachComparison { comparison in
            guard failure == nil, case .variable(let name) = comparison.right, let value = variables[name] else { return }
            failure = Self.checkVariable(name, value, for: comparison, path: path)
        }
        if let failure { throw failure }
    }

    private static func checkVariable(
        _ name: String, _ value: Value, for comparison: Predicate.Comparison, path: KeyPath
    ) -> GraphError? {
        switch comparison.op {
        case .like, .matches:
            guard case .string(let pattern) = value else {
                return .invalidArgument(
                    path: path.description, reason: "$\(name) must be a string pattern for \(comparison.op.rawValue)")
            }
            do {
                _ = try PatternProgram(comparison.op, pattern, options: comparison.options)
            } catch {
                let what = comparison.op == .like ? "LIKE pattern" : "regular expression"
                return .invalidArgument(
                    path: path.description,
                    reason: "$\(name) is not a valid \(what): \(error.message) (at offset \(error.offset))")
            }
        case .between:
            guard case .array(let bounds) = value, bounds.count == 2 else {
                return .invalidArgument(path: path.description, reason: "$\(name) must be an array of two bounds for BETWEEN")
            }
        default:
            break
        }
        return nil
    }

    /// What a key path has reached so far, as far as the model declares it.
    private enum DeclaredShape {
        case object(ObjectClass)
        /// A to-many key (array or set) with its element type.
        case collection(PropertyType)
        case scalar(PropertyType)
        /// An open class's undeclared key, an `any`, or a computed key: nothing more to check.
        case unknown
    }

    private func shape(of type: PropertyType) -> DeclaredShape {
        switch type {
        case .any: .unknown
        case .object: self.model.objectClass(for: type).map(DeclaredShape.object) ?? .unknown
        case .array(let element), .set(let element): .collection(element)
        case .bool, .int, .double, .string: .scalar(type)
        }
    }

    private func checkKeys(_ keys: [String], from elementClass: ObjectClass, path: KeyPath) throws(GraphError) {
        var shape = DeclaredShape.object(elementClass)
        for (index, key) in keys.enumerated() {
            let keyPath = { KeyPath(origin: path.origin, keys: path.keys + keys.prefix(index + 1)).description }
            if key.utf8.first == UInt8(ascii: "@") {
                switch shape {
                case .unknown:
                    return
                case .collection(let element):
                    // `@count` ends the path; the others apply the rest of it to each element (`self`: the elements).
                    if key == CollectionOperator.count.rawValue || keys.dropFirst(index + 1).first == "self" { return }
                    shape = self.shape(of: element)
                    continue
                case .object, .scalar:
                    throw GraphError.typeMismatch(path: keyPath(), reason: "a collection operator needs a collection")
                }
            }
            if case .collection(let element) = shape { shape = self.shape(of: element) }  // fans out over elements
            switch shape {
            case .unknown:
                return
            case .collection(let element):
                throw GraphError.typeMismatch(path: keyPath(), reason: "an array of \(element) has no keys")
            case .scalar(let type):
                throw GraphError.typeMismatch(path: keyPath(), reason: "\(type) is not an object")
            case .object(let objectClass):
                guard let property = objectClass.property(key) else {
                    if objectClass.isOpen {
                        shape = .unknown
                        continue
                    }
                    throw GraphError.undefinedKey(path: keyPath())
                }
                guard let stored = property.stored else { return }  // computed: its value's shape is not declared
                shape = self.shape(of: stored.type)
            }
        }
    }
}
