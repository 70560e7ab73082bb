// A query on a to-many key path: the elements a predicate keeps (`where`), in the order of sort descriptors
// (`orderBy`, the element itself last so the order is total) or, without them, in the relationship's own order, cut
// to a window (`offset`, `limit`), each element shown as its selected keys (`select`). `Graph.query` answers it once
// (`get`); LiveQuery.swift keeps it answered as the graph changes (`subscribe`).
//
// An element is shown as a record: its `$id` and, for each selected key path, its value, objects as references
// (one level: `{"$ref": N}`); without `select`, every key the object stores. A collection of scalars shows them as
// they are.

/// One sort descriptor (NSSortDescriptor): a key path of the element, the direction, and for strings whether case
/// counts.
public struct SortDescriptor: Sendable, Hashable {
    /// The key path's keys, relative to the element; empty for the element itself (`self`).
    public var keys: [String]
    public var ascending: Bool
    /// Strings compare lowercased.
    public var caseInsensitive: Bool

    public init(keys: [String], ascending: Bool = true, caseInsensitive: Bool = false) {
        self.keys = keys
        self.ascending = ascending
        self.caseInsensitive = caseInsensitive
    }
}

/// A query (see the file comment). Every member is optional on the wire.
public struct Query: Sendable, Equatable {
    /// nil: every element.
    public var predicate: Predicate?
    /// The `$NAME` variables' values.
    public var variables: [String: Value]
    public var orderBy: [SortDescriptor]
    public var offset: Int
    /// nil: no limit.
    public var limit: Int?
    /// The key paths shown per element (each split in keys); nil: every stored key.
    public var select: [[String]]?

    public init(
        predicate: Predicate? = nil, variables: [String: Value] = [:], orderBy: [SortDescriptor] = [], offset: Int = 0,
        limit: Int? = nil, select: [[String]]? = nil
    ) {
        self.predicate = predicate
        self.variables = variables
        self.orderBy = orderBy
        self.offset = offset
        self.limit = limit
        self.select = select
    }

    /// The most sort descriptors, selected keys and keys per key path a query may have.
    public static let maxSortDescriptors = 8
    public static let maxSelect = 64
    public static let maxKeys = 16
}

/// What a query gives: the window and how many elements the predicate matches in all.
public struct QueryResult: Sendable, Equatable {
    public var window: [Value]
    public var count: Int
}

/// Where a query's collection is, and what its elements are.
struct QueryTarget {
    /// The collection's key on the object holding it (nil: the path does not reach an object now).
    var holder: Touch?
    /// The collection's elements when it was found (empty when there is none); a live query reads them anew
    /// (`Graph.elements(of:)`).
    var elements: ValueList
    /// Whether the collection is a set (its own order is its members' total order).
    var isSet: Bool
    /// The elements' declared class, when the collection is typed with one.
    var elementClass: ObjectClass?
}

extension Graph {
    /// The query's result now.
    /// - Throws: as `get` of `path` (1001, 1005), `typeMismatch` when the path does not hold a collection,
    ///   `undefinedKey` for a key the typed element class does not declare, `invalidArgument` for a missing variable.
    public func query(_ path: KeyPath, _ query: Query) throws(GraphError) -> QueryResult {
        try self.query(path, query, fromLiveQueries: true)
    }

    /// `query`, answered from a live query when one is kept (or, for tests, always by scanning the collection).
    public func query(_ path: KeyPath, _ query: Query, fromLiveQueries: Bool) throws(GraphError) -> QueryResult {
        let target = try self.queryTarget(path, strict: true)
        try self.checkQuery(query, elementClass: target.elementClass, path: path)
        // A live query with the same collection, predicate and order answers in O(log n) per shown element; without
        // one the predicate is evaluated on every element (docs/RELIABILITY.md#hostile-input).
        if fromLiveQueries, let live = self.liveQuery(path, query, isSet: target.isSet) {
            let start = min(query.offset, live.count)
            let end = query.limit.map { min(live.count, start + min($0, live.count)) } ?? live.count
            let window = (start..<end).map { self.project(live.element(at: $0), select: query.select) }
            return QueryResult(window: window, count: live.count)
        }
        var matched: [(key: [Value], element: Value)] = []
        for element in target.elements {
            guard query.predicate.map({ self.matches($0, element: element, variables: query.variables, collector: nil) }) ?? true
            else { continue }
            matched.append((self.sortKey(of: element, query.orderBy, collector: nil), element))
        }
        if !query.orderBy.isEmpty {
            let orderBy = query.orderBy
            matched.sort { Self.compare($0.key, $0.element, $1.key, $1.element, orderBy) < 0 }
        }
        let start = min(query.offset, matched.count)
        let end = query.limit.map { min(matched.count, start + $0) } ?? matched.count
        let window = matched[start..<end].map { self.project($0.element, select: query.select) }
        return QueryResult(window: window, count: matched.count)
    }

    /// The live query answering `query`'s predicate and order on the collection at `path`, if one is kept.
    func liveQuery(_ path: KeyPath, _ query: Query, isSet: Bool) -> LiveQuery? {
        guard self.hasLiveQueries, let watch = self.queries.watches[path] else { return nil }
        let isOwnOrder = query.orderBy.isEmpty && !isSet
        return watch.group(for: query, isOwnOrder: isOwnOrder)?.live(answering: query)
    }

    /// Checks a query against the element class: its key paths (predicate, sort descriptors, selected keys) must
    /// be declared by a typed class, its variables given.
    func checkQuery(_ query: Query, elementClass: ObjectClass?, path: KeyPath) throws(GraphError) {
        if let predicate = query.predicate {
            try self.checkPredicate(predicate, elementClass: elementClass, variables: query.variables, path: path)
        }
        for descriptor in query.orderBy { try self.checkElementPath(descriptor.keys, elementClass, path) }
        for keys in query.select ?? [] { try self.checkElementPath(keys, elementClass, path) }
    }

    /// A key path of an element, checked through the declared classes it passes (1001 for an undeclared key).
    func checkElementPath(_ keys: [String], _ elementClass: ObjectClass?, _ path: KeyPath) throws(GraphError) {
        var current = elementClass
        for (index, key) in keys.enumerated() {
            guard let objectClass = current, !objectClass.isOpen else { return }
            if key.utf8.first == UInt8(ascii: "@") { return }  // an operator: the evaluator checks what follows
            guard let property = objectClass.property(key) else {
                throw GraphError.undefinedKey(path: path.description + "." + keys[...index].joined(separator: "."))
            }
            switch property.stored?.type {
            case .object(let name)?: current = self.model.classes[name]
            case .array(let element)?, .set(let element)?: current = self.model.objectClass(for: element)
            default: current = nil
            }
        }
    }

    /// Finds the collection at `path`. Strictly (a `get`, a new subscription) a path that does not reach a
    /// collection is an error; leniently (a live query following its path) it reads as no collection.
    func queryTarget(_ path: KeyPath, strict: Bool) throws(GraphError) -> QueryTarget {
        var target = QueryTarget(holder: nil, elements: [], isSet: false, elementClass: nil)
        guard let key = path.keys.last else {
            if strict { throw GraphError.typeMismatch(path: path.description, reason: "a query needs a to-many key") }
            return target
        }
        let holderValue: Value
        if strict {
            holderValue = try self.value(at: KeyPath(origin: path.origin, keys: Array(path.keys.dropLast())))
        } else {
            holderValue = self.resolve(KeyPath(origin: path.origin, keys: Array(path.keys.dropLast())))
        }
        guard case .object(let id) = holderValue, let object = self.objects[id] else {
            if strict && !holderValue.isNull {
                throw GraphError.typeMismatch(path: path.description, reason: "no object holds '\(key)'")
            }
            return target
        }
        if strict && !object.objectClass.isOpen && object.objectClass.property(key) == nil {
            throw GraphError.undefinedKey(path: path.description)
        }
        target.holder = Touch(object: id, key: key)
        let declared = object.objectClass.property(key)
        switch declared?.stored?.type {
        case .set(let element)?:
            target.isSet = true
            target.elementClass = self.model.objectClass(for: element)
        case .array(let element)?:
            target.elementClass = self.model.objectClass(for: element)
        case nil, .any?:
            break
        case let other?:
            if strict { throw GraphError.typeMismatch(path: path.description, reason: "a query needs a collection, not \(other)") }
        }
        if strict, declared?.computed != nil {
            throw GraphError.typeMismatch(path: path.description, reason: "a query needs a stored collection, not a computed key")
        }
        switch self.read(object, key) {
        case .array(let elements): target.elements = elements
        case .null: break
        case let other:
            if strict {
                throw GraphError.typeMismatch(path: path.description, reason: "a query needs a collection, not \(other.typeName)")
            }
        }
        return target
    }

    /// The values an element sorts by (one per descriptor), read leniently; with a collector, the triggers too.
    func sortKey(of element: Value, _ orderBy: [SortDescriptor], collector: TriggerCollector?) -> [Value] {
        orderBy.map { descriptor in
            descriptor.keys.isEmpty
                ? element : ((try? self.evaluate(descriptor.keys[...], from: element, collector: collector)) ?? .null)
        }
    }

    /// -1, 0 or 1: the order of two elements by their sort keys, then by the elements themselves (ids for objects),
    /// so that the order is total.
    static func compare(_ leftKey: [Value], _ left: Value, _ rightKey: [Value], _ right: Value, _ orderBy: [SortDescriptor]) -> Int {
        self.compare(leftKey[...], left, rightKey[...], right, orderBy)
    }

    /// `compare` on slices (a live query's entries compare their sort values in place, without copying them out).
    static func compare(
        _ leftKey: ArraySlice<Value>, _ left: Value, _ rightKey: ArraySlice<Value>, _ right: Value,
        _ orderBy: [SortDescriptor]
    ) -> Int {
        for (index, descriptor) in orderBy.enumerated() where index < leftKey.count && index < rightKey.count {
            let leftValue = leftKey[leftKey.startIndex + index]
            let rightValue = rightKey[rightKey.startIndex + index]
            var order: Int
            if descriptor.caseInsensitive, case .string(let a) = leftValue, case .string(let b) = rightValue {
                let (lower, upper) = (a.lowercased(), b.lowercased())
                order = lower < upper ? -1 : lower == upper ? Value.totalOrder(leftValue, rightValue) : 1
            } else {
                order = Value.totalOrder(leftValue, rightValue)
            }
            if order != 0 { return descriptor.ascending ? order : -order }
        }
        return Value.totalOrder(left, right)
    }

    /// How a query shows an element: an object as a record of its `$id` and selected keys (objects as references),
    /// a scalar as itself.
    func project(_ element: Value, select: [[String]]?, collector: TriggerCollector? = nil) -> Value {
        guard case .object(let id) = element, let object = self.objects[id] else { return element }
        var record = Record(id: id)
        if let select {
            record.keys = select.map { $0.joined(separator: ".") }
            record.values = select.map { keys in
                (try? self.evaluate(keys[...], from: element, collector: collector)) ?? .null
            }
        } else {
            collector?.record(Touch(object: id, key: ""), .leaf)  // every key of the element
            record.keys = object.keys
            record.values = object.values
        }
        return .record(record)
    }
}
