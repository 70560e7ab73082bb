// Key-value coding writes: `set` by key path (creating missing intermediates like `mkdir -p`), with key-value
// validation against the model (types, coercions, null policy, rules), notification policies and side effects.
// Everything that can fail is checked before the change, so a failed set changes nothing and notifies nobody.

/// A validated change, ready to commit: the keys it touches and what performs it.
struct PlannedChange {
    var mutations: [Mutation]
    /// A plain set: no closure (no allocation on the hot path). Exactly one of `store` and `perform` is set.
    let store: PlannedStore?
    let perform: (() -> Void)?
    var storedValue: Value?

    init(mutations: [Mutation], apply: @escaping () -> Void, storedValue: Value? = nil) {
        self.mutations = mutations
        self.store = nil
        self.perform = apply
        self.storedValue = storedValue
    }

    init(mutations: [Mutation], store: PlannedStore, storedValue: Value?) {
        self.mutations = mutations
        self.store = store
        self.perform = nil
        self.storedValue = storedValue
    }
}

/// Stores `value` (materialized then: records become objects) for `key` of `object`, then applies the key's side
/// effects. (Fields, not an enum with payloads: valgrind flags the copies of a multi-payload enum mixing a closure
/// with these fields, whose tag bits sit beside uninitialised padding.)
struct PlannedStore {
    let value: Value
    let key: String
    let object: GraphObject
    let effects: [SideEffect]
    /// The keys below `key` down to the one the set ends at, when the set creates intermediates (else empty).
    let innerKeys: ArraySlice<String>
    /// The deadline the key the set ends at gets; nil removes any it had (Graph+Expiry.swift).
    let expiresAt: UInt64?
}

/// The keys plain sets found undeclared in an open class that declares others (the root of most models), the last
/// two: a class's declarations never change, so the answer stands, and comparing a key with the one remembered (the
/// same string, from the dispatcher's cached key path) costs a few instructions where hashing it in the class's
/// index costs ~300 per set. The classes are compared by identity and also held, so an identity never stands for
/// another class; the fields are separate (no optional tuple to copy, which cost a retain and release per check).
struct UndeclaredKeys {
    private var firstClass: ObjectIdentifier?
    private var firstKey = ""
    private var secondClass: ObjectIdentifier?
    private var secondKey = ""
    /// The remembered classes, held (never read on the way).
    private var held: (ObjectClass?, ObjectClass?)

    /// Whether `key` is an undeclared key of the open class `objectClass` (what a plain set may store).
    @inline(__always)
    mutating func isUndeclared(_ key: String, in objectClass: ObjectClass) -> Bool {
        guard objectClass.isOpen else { return false }
        if objectClass.properties.isEmpty { return true }
        let identity = ObjectIdentifier(objectClass)
        if self.firstClass == identity && self.firstKey == key { return true }
        if self.secondClass == identity && self.secondKey == key { return true }
        return self.check(key, in: objectClass)
    }

    @inline(never)
    private mutating func check(_ key: String, in objectClass: ObjectClass) -> Bool {
        guard objectClass.property(key) == nil else { return false }
        (self.secondClass, self.secondKey, self.held.1) = (self.firstClass, self.firstKey, self.held.0)
        (self.firstClass, self.firstKey, self.held.0) = (ObjectIdentifier(objectClass), key, objectClass)
        return true
    }
}

extension Graph {
    /// Performs a planned change (inside its commit).
    func apply(_ planned: PlannedChange) {
        guard let store = planned.store else {
            planned.perform?()
            return
        }
        let stored = self.materialize(store.value)
        self.store(stored, forKey: store.key, in: store.object)
        if store.expiresAt != nil || !self.deadlines.isEmpty {
            // The key the path ends at: `store.key`, or one inside the intermediates just created.
            var holder = store.object.id
            var key = store.key
            var value = stored
            for inner in store.innerKeys {
                guard case .object(let id) = value, let object = self.objects[id] else { break }
                holder = id
                key = inner
                value = object.value(forKey: inner) ?? .null
            }
            self.setDeadline(store.expiresAt, object: holder, key: key)
        }
        for case .increment(let target, let amount) in store.effects {
            let current: Int64
            if case .int(let number)? = store.object.value(forKey: target) { current = number } else { current = 0 }
            self.store(.int(current &+ amount), forKey: target, in: store.object)
        }
    }
}

/// What a successful `set` did.
public struct SetResult: Sendable, Equatable {
    /// The seq of the change.
    public var seq: UInt64
    /// The value stored (as `get` shows it) when validation changed it (coerced, trimmed, a null replacement); nil
    /// when stored as given.
    public var storedValue: Value?
}

extension Graph {
    /// Sets the value at `path` and notifies every observer the change reaches before returning. A record becomes
    /// a new object (of the declared class where the key is typed). Missing or null intermediates are created.
    /// With `expiresAt` (Unix epoch milliseconds), the key the path ends at expires then (`expire(object:key:now:)`);
    /// without it, the key loses any deadline it had. Only a set changes deadlines: a collection mutation keeps the
    /// key's deadline (as Redis's `LPUSH` keeps a TTL that `SET` clears).
    /// - Throws: `undefinedKey`, `readOnly`, `validationFailed`, `nullNotAllowed`, `typeMismatch`, `tooDeep`,
    ///   `invalidPath`, `ttlNotAllowed`; nothing is changed (deadlines included) when it throws.
    @discardableResult
    public func set(
        _ path: KeyPath, to value: Value, if condition: WriteCondition? = nil, expiresAt: UInt64? = nil
    ) throws(GraphError) -> SetResult {
        if condition == nil, expiresAt == nil, let seq = self.plainStore(path, value) {
            return SetResult(seq: seq, storedValue: nil)
        }
        if let condition { try self.check(condition, at: path) }
        let planned = try self.planSet(path, value, expiresAt: expiresAt)
        let seq = self.commit(mutations: planned.mutations) { self.apply(planned) }
        // What was stored, read back when validation changed the value (so created objects show their ids).
        let stored = planned.storedValue.map { _ in (try? self.get(path)) ?? .null }
        return SetResult(seq: seq, storedValue: stored)
    }

    /// The plain set: a scalar stored under an undeclared key of an existing open object reached through existing
    /// objects, with no deadline on the key, outside any bracket or transaction. Exactly what the general path does
    /// in that case — take a seq, store value and modSeq, and when observers see the key, the KVO bracket around the
    /// store (`commitPlainStore`, ChangeBracket.swift) — without planning or allocation. Nil when any condition does
    /// not hold (the general path then runs and reports any error).
    private func plainStore(_ path: KeyPath, _ value: Value) -> UInt64? {
        guard value.isPlainScalar, let last = path.keys.last, self.undoLog == nil, self.manualBrackets.isEmpty,
            var object = path.origin == .root ? self.rootObject : self.objects[path.origin]
        else { return nil }
        var index = 0
        while index < path.keys.count - 1 {
            let key = path.keys[index]
            guard self.plainKeys.isUndeclared(key, in: object.objectClass),
                case .object(let id)? = object.value(forKey: key), let next = self.objects[id]
            else { return nil }
            object = next
            index += 1
        }
        guard self.plainKeys.isUndeclared(last, in: object.objectClass), last.utf8.first != UInt8(ascii: "@")
        else { return nil }
        guard self.deadlines.isEmpty || self.deadlines.deadline(object: object.id, key: last) == nil,
            !self.hasLiveQueries || !self.queries.concerns(Touch(object: object.id, key: last))
        else { return nil }
        if !self.registry.triggerIndex.isEmpty,
            let entries = self.registry.entries(for: Touch(object: object.id, key: last)),
            object.objectClass.automaticallyNotifies(last)
        {
            return self.commitPlainStore(value, forKey: last, in: object, entries: entries)
        }
        self.seq += 1
        object.setValue(value, forKey: last, modSeq: self.seq)
        return self.seq
    }

    /// Validates a set and describes it: the keys it touches (none under the onChange policy when unchanged, or
    /// manual notification) and the closure that performs it.
    func planSet(_ path: KeyPath, _ value: Value, expiresAt: UInt64? = nil) throws(GraphError) -> PlannedChange {
        let (object, key, prepared, wrapped) = try self.prepareSet(path, value)
        // What validation made of the value itself: created intermediates wrap it in one-key records.
        var leaf = prepared
        var leafClass = object.objectClass
        for _ in 0..<wrapped {
            guard case .record(let record) = leaf, let inner = record.values.first else { break }
            leafClass = record.className.flatMap { self.model.classes[$0] } ?? .open
            leaf = inner
        }
        if expiresAt != nil, let last = path.keys.last {
            // Expiry stores null: only where null may be stored (an undeclared key of an open class was validated
            // as such already; a declared one must be nullable, not merely have a null replacement).
            if let declared = leafClass.property(last), declared.stored?.isNullable != true {
                throw GraphError.ttlNotAllowed(path: path.description)
            }
        }
        var stored: StoredProperty?
        if case .stored(let property)? = key.descriptor?.kind { stored = property }
        var notifies: Bool
        switch object.objectClass.automaticallyNotifies(key.name) ? stored?.notification ?? .always : .manual {
        case .always:
            notifies = true
        case .onChange:
            // The seeds' Listing 4: notify only when the value really changes.
            notifies = object.value(forKey: key.name).map { $0 != prepared } ?? true
        case .manual:
            notifies = false
        }
        let effects = notifies ? stored?.sideEffects ?? [] : []
        var mutations: [Mutation] = []
        if notifies {
            mutations.reserveCapacity(1 + effects.count)
            mutations.append(Mutation(touch: Touch(object: object.id, key: key.name)))
            for case .increment(let target, _) in effects {
                mutations.append(Mutation(touch: Touch(object: object.id, key: target)))
            }
        }
        return PlannedChange(
            mutations: mutations,
            store: PlannedStore(
                value: prepared, key: key.name, object: object, effects: effects,
                innerKeys: path.keys[(path.keys.count - wrapped)...], expiresAt: expiresAt),
            storedValue: leaf == value ? nil : leaf)
    }

    /// Convenience: `set(KeyPath(parsing: path), to: value, if: condition, expiresAt: expiresAt)`.
    @discardableResult
    public func set(
        _ path: String, to value: Value, if condition: WriteCondition? = nil, expiresAt: UInt64? = nil
    ) throws(GraphError) -> SetResult {
        try self.set(KeyPath(parsing: path), to: value, if: condition, expiresAt: expiresAt)
    }

    /// Runs key-value validation for `value` at `path` without storing or notifying; returns the value that `set`
    /// would store.
    public func validate(_ path: KeyPath, _ value: Value) throws(GraphError) -> Value {
        let prepared = try self.prepareSet(path, value)
        var leaf = prepared.value
        for _ in 0..<prepared.wrapped {
            guard case .record(let record) = leaf, let inner = record.values.first else { break }
            leaf = inner
        }
        return leaf
    }

    /// Stores a value without any notification (a manual-notification owner calls this between
    /// `willChangeValue` and `didChangeValue`). Validation still applies. Takes a seq unless inside a bracket.
    @discardableResult
    public func setPrimitiveValue(_ value: Value, forKey key: String, of object: ObjectID) throws(GraphError) -> UInt64 {
        let (target, property, prepared, _) = try self.prepareSet(KeyPath(origin: object, keys: [key]), value)
        return self.commit([]) { self.store(self.materialize(prepared), forKey: property.name, in: target) }
    }

    // MARK: - Preparing

    /// The key being set, with its declaration when the class has one.
    struct SetKey {
        let name: String
        let descriptor: PropertyDescriptor?
    }

    /// Resolves the target object (the deepest existing one) and validates the value for the key being set;
    /// `wrapped` counts the records wrapped around the value for intermediates that do not exist yet.
    private func prepareSet(
        _ path: KeyPath, _ value: Value
    ) throws(GraphError) -> (object: GraphObject, key: SetKey, value: Value, wrapped: Int) {
        guard !path.keys.isEmpty else {
            throw GraphError.invalidPath(path: path.description, reason: "a set needs a key to set")
        }
        if let reserved = path.keys.first(where: { $0.utf8.first == UInt8(ascii: "@") }) {
            // `@` starts collection operators: a key spelled like one could be stored but never read back.
            throw GraphError.invalidPath(path: path.description, reason: "'\(reserved)' cannot be set: '@' starts collection operators")
        }
        guard var object = self.objects[path.origin] else {
            throw GraphError.undefinedKey(path: path.prefixDescription(0))
        }
        for (index, key) in path.keys.enumerated() {
            // The path up to here, spelled out only when an error or a validation needs it (building it costs more
            // than the rest of a plain set).
            let objectClass = object.objectClass
            let descriptor = objectClass.property(key)
            if descriptor == nil && !objectClass.isOpen {
                throw GraphError.undefinedKey(path: path.prefixDescription(index + 1))
            }
            if index == path.keys.count - 1 {
                // An undeclared key of an open class takes any scalar as it is.
                let prepared =
                    descriptor == nil && value.isPlainScalar
                    ? value : try self.prepare(value, for: descriptor, path: path.prefixDescription(index + 1))
                return (object, SetKey(name: key, descriptor: descriptor), prepared, 0)
            }
            if descriptor?.computed != nil { throw GraphError.readOnly(path: path.prefixDescription(index + 1)) }
            switch self.read(object, key) {
            case .object(let id):
                object = self.objects[id]!  // invariant: stored references point to live objects
            case .null:
                // A missing or null intermediate: the rest of the path becomes nested records, so the whole change
                // is one mutation of this key (mkdir -p) — within the value depth limit, checked before building.
                if path.keys.count - 1 - index > self.maxValueDepth {
                    throw GraphError.tooDeep(path: path.description, limit: self.maxValueDepth)
                }
                var nested = value
                for inner in path.keys[(index + 1)...].reversed() {
                    nested = .record(Record(keys: [inner], values: [nested]))
                }
                let prepared = try self.prepare(nested, for: descriptor, path: path.prefixDescription(index + 1))
                return (object, SetKey(name: key, descriptor: descriptor), prepared, path.keys.count - 1 - index)
            case let other:
                throw GraphError.typeMismatch(
                    path: path.prefixDescription(index + 1), reason: "\(other.typeName) is not an object")
            }
        }
        preconditionFailure("unreachable: the loop returns at the last key")
    }

    /// The declaration of `key` on `objectClass`; nil on an open class that does not declare it.
    func declaredProperty(
        _ key: String, of objectClass: ObjectClass, path: String
    ) throws(GraphError) -> PropertyDescriptor? {
        if let property = objectClass.property(key) { return property }
        guard objectClass.isOpen else { throw GraphError.undefinedKey(path: path) }
        return nil
    }

    /// Validates a value for a key: computed keys are read-only, stored ones validated, undeclared keys of open
    /// classes take any storable value.
    private func prepare(_ value: Value, for descriptor: PropertyDescriptor?, path: String) throws(GraphError) -> Value {
        switch descriptor?.kind {
        case .computed?:
            throw GraphError.readOnly(path: path)
        case .stored(let stored)?:
            return try self.validate(value, for: stored, path: path, depth: 0)
        case nil:
            return try self.prepareUntyped(value, path: path, depth: 0)
        }
    }

    /// Key-value validation of one stored property (docs/MODEL.md#validation).
    func validate(_ value: Value, for stored: StoredProperty, path: String, depth: Int) throws(GraphError) -> Value {
        var result = value
        if result.isNull {
            guard !stored.isNullable else { return .null }
            switch stored.nullPolicy {
            case .reject: throw GraphError.nullNotAllowed(path: path)
            case .replace(let replacement): result = replacement
            }
        }
        do {
            result = try stored.type.coerce(result)
            for rule in stored.rules { result = try rule.apply(to: result) }
            if let validator = stored.validator { result = try validator(result) }
        } catch {
            throw GraphError.validationFailed(path: path, reason: error.reason)
        }
        return try self.prepareObjects(result, type: stored.type, path: path, depth: depth)
    }

    /// Checks records and references against a declared type: a record becomes an object of the declared class.
    func prepareObjects(_ value: Value, type: PropertyType, path: String, depth: Int) throws(GraphError) -> Value {
        if depth > self.maxValueDepth { throw GraphError.tooDeep(path: path, limit: self.maxValueDepth) }
        switch (type, value) {
        case (.array(let element), .array(let elements)), (.set(let element), .array(let elements)):
            var prepared: [Value] = []
            for item in elements { prepared.append(try self.prepareObjects(item, type: element, path: path, depth: depth + 1)) }
            return .array(prepared)
        case (.object(let name), .record(let record)):
            guard let objectClass = self.model.classes[name] else { return value }
            return .record(try self.prepareRecord(record, as: objectClass, path: path, depth: depth + 1))
        case (.object(let name), .object(let id)):
            guard let target = self.objects[id] else { throw GraphError.undefinedKey(path: "$\(id)") }
            if name != ObjectClass.open.name && target.objectClass.name != name {
                throw GraphError.validationFailed(
                    path: path, reason: "expected a \(name), got $\(id), a \(target.objectClass.name)")
            }
            return value
        case (.any, _):
            return try self.prepareUntyped(value, path: path, depth: depth)
        default:
            return value
        }
    }

    /// Validates every key of a record against `objectClass` and tags it with the class.
    private func prepareRecord(
        _ record: Record, as objectClass: ObjectClass, path: String, depth: Int
    ) throws(GraphError) -> Record {
        var prepared = Record(keys: [], values: [])
        prepared.className = objectClass.name
        for (key, value) in zip(record.keys, record.values) {
            let here = "\(path).\(key)"
            try Self.checkKey(key, path: path)
            let descriptor = try self.declaredProperty(key, of: objectClass, path: here)
            let validated: Value
            switch descriptor?.kind {
            case .computed?: throw GraphError.readOnly(path: here)
            case .stored(let stored)?: validated = try self.validate(value, for: stored, path: here, depth: depth)
            case nil: validated = try self.prepareUntyped(value, path: here, depth: depth)
            }
            prepared.keys.append(key)
            prepared.values.append(validated)
        }
        return prepared
    }

    /// Checks a value for an untyped slot: finite numbers, valid keys, live references, bounded depth. Records
    /// become open objects.
    func prepareUntyped(_ value: Value, path: String, depth: Int) throws(GraphError) -> Value {
        if depth > self.maxValueDepth { throw GraphError.tooDeep(path: path, limit: self.maxValueDepth) }
        switch value {
        case .null, .bool, .int, .string:
            return value
        case .double(let number):
            guard number.isFinite else { throw GraphError.validationFailed(path: path, reason: "number is not finite") }
            return value
        case .array(let elements):
            var prepared: [Value] = []
            prepared.reserveCapacity(elements.count)
            for element in elements { prepared.append(try self.prepareUntyped(element, path: path, depth: depth + 1)) }
            return .array(prepared)
        case .object(let id):
            guard self.objects[id] != nil else { throw GraphError.undefinedKey(path: "$\(id)") }
            return value
        case .record(let record):
            return .record(try self.prepareRecord(record, as: .open, path: path, depth: depth + 1))
        }
    }

    private static func checkKey(_ key: String, path: String) throws(GraphError) {
        if key.isEmpty || key.utf8.contains(UInt8(ascii: ".")) || key.utf8.first == UInt8(ascii: "$")
            || key.utf8.first == UInt8(ascii: "@")
        {
            throw GraphError.invalidPath(path: path, reason: "'\(key)' cannot be a key (empty, '.' or leading '$' or '@')")
        }
    }
}
