// One property of a model file's class: a stored property (type, default, null policy, notification policy,
// validation rules, increments) or a computed one (an expression plus `affectedBy`). Checks that need only the
// property itself live here; checks across properties or classes are in ModelReader.swift and `Model`.

import ObjectGraph
import WireProtocol

/// Reads one property declaration.
struct PropertyReader {
    let reader: ObjectReader
    let name: String
    /// The classes the file declares, for checking types.
    let classNames: [String]

    /// The members of a stored property.
    static let storedMembers = [
        "type", "default", "nullable", "nullValue", "notify", "trim", "min", "max", "minLength", "maxLength", "pattern",
        "enum", "increments", "description",
    ]
    /// The members of a computed property.
    static let computedMembers = ["computed", "affectedBy", "type", "description"]

    init(_ reader: ObjectReader, name: String, classNames: [String]) {
        self.reader = reader
        self.name = name
        self.classNames = classNames
    }

    /// The property, or the first problem with it.
    func read() throws(ModelError) -> PropertyDescriptor {
        if self.reader.has("computed") {
            return PropertyDescriptor(name: self.name, kind: .computed(try self.readComputed()))
        }
        return PropertyDescriptor(name: self.name, kind: .stored(try self.readStored()))
    }

    // MARK: - Computed

    private func readComputed() throws(ModelError) -> ComputedProperty {
        var misplaced: [String: String] = [:]
        for key in Self.storedMembers where !Self.computedMembers.contains(key) {
            misplaced[key] = "'\(key)' does not apply to a computed property"
        }
        try self.reader.checkMembers(allowed: Self.computedMembers, misplaced: misplaced)
        _ = try self.reader.string("description")
        if self.reader.has("type") { _ = try self.readType() }  // documentation only: checked, not kept
        guard let text = try self.reader.string("computed") else {
            preconditionFailure("unreachable: read() saw the member")
        }
        let expression: Expression
        do {
            expression = try Expression.parse(text)
        } catch {
            throw ModelError(field: self.reader.path("computed"), error.description)
        }
        let affectedBy = try self.reader.strings("affectedBy") ?? []
        for path in affectedBy
        where path.isEmpty || path.split(separator: ".", omittingEmptySubsequences: false).contains("") {
            throw ModelError(field: self.reader.path("affectedBy"), "'\(path)' is not a key path")
        }
        var dependencies: [String] = []
        for path in expression.keyPaths + affectedBy where !dependencies.contains(path) { dependencies.append(path) }
        return ComputedProperty(dependencies: dependencies, expressionText: text) { read in expression.evaluate(read) }
    }

    // MARK: - Stored

    private func readStored() throws(ModelError) -> StoredProperty {
        var misplaced: [String: String] = [:]
        misplaced["affectedBy"] = "'affectedBy' applies to computed properties only"
        try self.reader.checkMembers(allowed: Self.storedMembers, misplaced: misplaced)
        _ = try self.reader.string("description")
        guard self.reader.has("type") else {
            throw ModelError(
                field: self.reader.path("type"),
                "missing member: a stored property needs a 'type' (a computed one needs 'computed')")
        }
        let type = try self.readType()
        var property = StoredProperty(type: type)

        // Null: `nullValue` implies not nullable; without it, a non-nullable property rejects null.
        let nullValue = try self.readValue("nullValue", type: type)
        switch (try self.reader.bool("nullable"), nullValue) {
        case (true?, _?):
            throw ModelError(
                field: self.reader.path("nullValue"),
                "a nullable property stores null; 'nullValue' needs \"nullable\": false")
        case (_, let replacement?):
            (property.isNullable, property.nullPolicy) = (false, .replace(replacement))
        case (false?, nil):
            (property.isNullable, property.nullPolicy) = (false, .reject)
        case (true?, nil), (nil, nil):
            break
        }

        if let defaultValue = try self.readValue("default", type: type) {
            property.defaultValue = defaultValue
        } else if self.reader.has("default") && !property.isNullable {
            throw ModelError(
                field: self.reader.path("default"), "the property is not nullable, so its default cannot be null")
        } else if !property.isNullable {
            guard let nullValue else {
                throw ModelError(
                    field: self.reader.path("default"),
                    "missing member: a property that is not nullable needs a default")
            }
            property.defaultValue = nullValue
        }

        if let notify = try self.reader.string("notify") {
            guard let policy = NotificationPolicy(rawValue: notify) else {
                throw ModelError(
                    field: self.reader.path("notify"), "unknown policy '\(notify)' (always, onChange or manual)")
            }
            property.notification = policy
        }
        property.rules = try self.readRules(type: type)
        if let targets = try self.reader.strings("increments") {
            if property.notification == .manual {
                throw ModelError(
                    field: self.reader.path("increments"),
                    "increments happen with notifications; notify manual has none")
            }
            property.sideEffects = targets.map { .increment(key: $0, by: 1) }
        }
        return property
    }

    /// The `type` member, with every class it names declared in the file.
    private func readType() throws(ModelError) -> PropertyType {
        let field = self.reader.path("type")
        guard let text = try self.reader.string("type") else { preconditionFailure("unreachable: checked by callers") }
        guard let type = PropertyType(parsing: text) else {
            throw ModelError(field: field, "unknown type '\(text)' (\(Self.typeHelp))")
        }
        var element = type
        while case .array(let inner) = element { element = inner }
        if case .object(let className) = element, className != ObjectClass.open.name,
            !self.classNames.contains(className)
        {
            throw ModelError(field: field, "unknown type '\(className)' (\(Self.typeHelp))")
        }
        return type
    }

    private static let typeHelp = "bool, int, double, string, any, a declared class, Object, or [T] for an array of T"

    /// A value member (`default`, `nullValue`) fitted to the type; nil when absent or null.
    private func readValue(_ key: String, type: PropertyType) throws(ModelError) -> Value? {
        guard let json = self.reader.value(key), !json.isNull else { return nil }
        do {
            return try ValueFitting.fit(ObjectReader.graphValue(json), to: type)
        } catch {
            throw ModelError(
                field: self.reader.path(key), "\(key == "default" ? "the default" : "'\(key)'") \(error.reason)")
        }
    }

    // MARK: - Validation rules

    /// The validation rules, in the order they run: trim, minLength, maxLength, min, max, pattern, enum.
    private func readRules(type: PropertyType) throws(ModelError) -> [ValidationRule] {
        var rules: [ValidationRule] = []
        if try self.reader.bool("trim") == true {
            try self.require("trim", type == .string, "strings")
            rules.append(.trim)
        }
        let minLength = try self.reader.count("minLength")
        let maxLength = try self.reader.count("maxLength")
        if minLength != nil { try self.require("minLength", Self.hasLength(type), "strings and arrays") }
        if maxLength != nil { try self.require("maxLength", Self.hasLength(type), "strings and arrays") }
        if let minLength, let maxLength, minLength > maxLength {
            throw ModelError(
                field: self.reader.path("maxLength"), "maxLength \(maxLength) is less than minLength \(minLength)")
        }
        let minimum = try self.reader.number("min")
        let maximum = try self.reader.number("max")
        if minimum != nil { try self.require("min", type == .int || type == .double, "int and double") }
        if maximum != nil { try self.require("max", type == .int || type == .double, "int and double") }
        if let minimum, let maximum, minimum > maximum {
            throw ModelError(field: self.reader.path("max"), "max is less than min")
        }
        rules += [minLength.map(ValidationRule.minLength), maxLength.map(ValidationRule.maxLength)].compactMap { $0 }
        rules += [minimum.map(ValidationRule.min), maximum.map(ValidationRule.max)].compactMap { $0 }
        if let pattern = try self.reader.string("pattern") {
            try self.require("pattern", type == .string, "strings")
            do {
                _ = try Regex(pattern)
            } catch {
                throw ModelError(field: self.reader.path("pattern"), "invalid regular expression: \(error)")
            }
            rules.append(.pattern(pattern))
        }
        if let choices = try self.reader.array("enum") {
            guard !choices.isEmpty else {
                throw ModelError(field: self.reader.path("enum"), "expected at least one value")
            }
            var allowed: [Value] = []
            for choice in choices {
                do throws(ValidationFailure) {
                    guard !choice.isNull else { throw ValidationFailure("cannot include null (use nullable)") }
                    allowed.append(try ValueFitting.fit(ObjectReader.graphValue(choice), to: type))
                } catch {
                    throw ModelError(field: self.reader.path("enum"), "\(choice): \(error.reason)")
                }
            }
            rules.append(.oneOf(allowed))
        }
        return rules
    }

    private func require(_ key: String, _ applies: Bool, _ types: String) throws(ModelError) {
        guard !applies else { return }
        throw ModelError(field: self.reader.path(key), "'\(key)' applies to \(types) only")
    }

    private static func hasLength(_ type: PropertyType) -> Bool {
        if case .array = type { return true }
        return type == .string
    }
}
