// The document and class levels of a model file: `root`, `classes`, each class's `open` and `properties`, the
// checks that need a whole class (`increments` targets), and the hand-over to `Model`, whose own checks (unknown
// classes, dependencies, cycles, default nesting) report fields that are mapped back to model-file members here.

import ObjectGraph
import WireProtocol

/// Reads a parsed model file into a checked `Model`, stopping at the first problem.
struct ModelReader {
    /// Where each computed property's dependencies came from, by the property's field path, so a bad dependency
    /// reported by `Model` can be blamed on `computed` or on `affectedBy`.
    private var affectedByLists: [String: [String]] = [:]

    /// The members a model file's top level may have.
    static let documentMembers = ["root", "classes", "description"]
    /// The members a class may have.
    static let classMembers = ["open", "properties", "description"]

    /// The model the document declares.
    mutating func read(_ document: JSONValue) throws(ModelError) -> Model {
        let top = try ObjectReader(document, field: "")
        try top.checkMembers(allowed: Self.documentMembers)
        _ = try top.string("description")
        guard let rootName = try top.string("root") else {
            throw ModelError(field: "root", "missing member: the name of the root object's class")
        }
        let classesReader = try top.object("classes")
        let classNames = classesReader?.object.keys ?? []
        if rootName != ObjectClass.open.name && !classNames.contains(rootName) {
            let declared = classNames.isEmpty ? "no classes" : classNames.joined(separator: ", ")
            throw ModelError(field: "root", "unknown class '\(rootName)' (the file declares \(declared))")
        }
        var classes: [ObjectClass] = []
        if let classesReader {
            for (name, value) in classesReader.object.members {
                let reader = try ObjectReader(value, field: classesReader.path(name))
                classes.append(try self.readClass(name, reader, classNames: classNames))
            }
        }
        let root = classes.first { $0.name == rootName } ?? .open
        do {
            return try Model(root: root, classes: classes)
        } catch {
            throw self.blame(error)
        }
    }

    // MARK: - Classes

    private mutating func readClass(
        _ name: String, _ reader: ObjectReader, classNames: [String]
    ) throws(ModelError) -> ObjectClass {
        try Self.checkClassName(name, field: reader.field)
        try reader.checkMembers(allowed: Self.classMembers)
        let isOpen = try reader.bool("open") ?? false
        _ = try reader.string("description")
        var properties: [PropertyDescriptor] = []
        if let propertiesReader = try reader.object("properties") {
            for (key, value) in propertiesReader.object.members {
                let propertyReader = try ObjectReader(value, field: propertiesReader.path(key))
                let property = try PropertyReader(propertyReader, name: key, classNames: classNames).read()
                if case .computed = property.kind {
                    self.affectedByLists[propertyReader.field] = try propertyReader.strings("affectedBy") ?? []
                }
                properties.append(property)
            }
        }
        let objectClass = ObjectClass(name: name, isOpen: isOpen, properties: properties)
        try Self.checkIncrements(of: objectClass, field: reader.field)
        return objectClass
    }

    /// A class name must be usable as a property type: an identifier that is not a built-in type.
    private static func checkClassName(_ name: String, field: String) throws(ModelError) {
        if name == ObjectClass.open.name {
            throw ModelError(field: field, "'\(name)' is the built-in open class; choose another name")
        }
        guard case .object(let parsed)? = PropertyType(parsing: name), parsed == name else {
            if PropertyType(parsing: name) != nil {
                throw ModelError(field: field, "'\(name)' is a built-in type, not a class name")
            }
            throw ModelError(
                field: field, "'\(name)' cannot be a class name (a letter, then letters, digits or '_')")
        }
    }

    /// Every `increments` target must be another stored int property of the same class.
    private static func checkIncrements(of objectClass: ObjectClass, field: String) throws(ModelError) {
        for property in objectClass.properties {
            guard case .stored(let stored) = property.kind else { continue }
            let here = "\(field).properties.\(property.name).increments"
            for case .increment(let target, _) in stored.sideEffects {
                guard target != property.name else {
                    throw ModelError(field: here, "a property cannot increment itself")
                }
                switch objectClass.property(target)?.kind {
                case nil:
                    throw ModelError(field: here, "'\(target)' is not a property of \(objectClass.name)")
                case .computed?:
                    throw ModelError(field: here, "'\(target)' is computed; increments needs a stored int property")
                case .stored(let targetProperty)? where targetProperty.type != .int:
                    throw ModelError(
                        field: here, "'\(target)' is a \(targetProperty.type); increments needs an int property")
                case .stored?:
                    continue
                }
            }
        }
    }

    // MARK: - Model errors

    /// Maps a `Model` error onto the model-file member at fault: `Model` reports a computed property's dependencies
    /// as one `dependencies` field, which here is `affectedBy` when the bad path came from there, else `computed`.
    private func blame(_ error: ModelError) -> ModelError {
        let suffix = ".dependencies"
        guard error.field.hasSuffix(suffix) else { return error }
        let property = String(error.field.dropLast(suffix.count))
        // The message starts with the quoted dependency: "'address.zip' names 'zip', which Address does not declare".
        let quoted = error.message.split(separator: "'", omittingEmptySubsequences: false)
        let dependency = quoted.count > 1 ? String(quoted[1]) : ""
        let fromAffectedBy = self.affectedByLists[property]?.contains(dependency) == true
        return ModelError(field: "\(property).\(fromAffectedBy ? "affectedBy" : "computed")", error.message)
    }
}
