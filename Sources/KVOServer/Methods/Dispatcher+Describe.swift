// `describe`: the model as data (Protocol/methods.md#describe): classes, their keys with types, defaults, policies
// and rules, computed keys with their dependencies. Not a hot path: results are built as JSON trees.
import ObjectGraph
import ValueCoding
import WireProtocol

extension Dispatcher {
    func describe(_ request: RPCRequest, on session: Session) throws {
        let params = Params(request.params, names: ["path"], method: "describe")
        try params.rejectUnknown()
        let graph = self.context.graph
        var result = JSONObject()
        switch params["path"] {
        case nil, .null?:
            result["root"] = .string(graph.model.root.name)
            var classes = JSONObject()
            for name in [graph.model.root.name] + graph.model.classNames where classes[name] == nil {
                if let objectClass = graph.model.classes[name] { classes[name] = Self.describe(objectClass) }
            }
            result["classes"] = .object(classes)
        case .string(let text)?:
            let path = try self.keyPath(text)
            guard case .object(let id) = try graph.value(at: path), case .record(let snapshot) = graph.get(id: id),
                let objectClass = try graph.objectClass(at: path)
            else {
                throw GraphError.typeMismatch(path: path.description, reason: "the value there is not an object")
            }
            result["path"] = .string(path.description)
            result["id"] = .int(Int64(id))
            result["class"] = Self.describe(objectClass)
            var keys = JSONObject()
            for (key, value) in zip(snapshot.keys, snapshot.values) { keys[key] = .string(value.typeName) }
            result["keys"] = .object(keys)
        default:
            throw RPCError.badParams("describe: 'path' must be a string")
        }
        self.writeResult { JSONWriter.append(.object(result), to: &$0) }
    }

    /// One class as the model file would declare it, plus the dependencies computed keys ended up with.
    static func describe(_ objectClass: ObjectClass) -> JSONValue {
        var description = JSONObject()
        description["name"] = .string(objectClass.name)
        description["open"] = .bool(objectClass.isOpen)
        var properties = JSONObject()
        for property in objectClass.properties {
            var entry = JSONObject()
            switch property.kind {
            case .stored(let stored):
                entry["type"] = .string(stored.type.description)
                if !stored.defaultValue.isNull { entry["default"] = stored.defaultValue.jsonValue }
                entry["nullable"] = .bool(stored.isNullable)
                if case .replace(let replacement) = stored.nullPolicy, !stored.isNullable {
                    entry["nullValue"] = replacement.jsonValue
                }
                entry["notify"] = .string(stored.notification.rawValue)
                for rule in stored.rules {
                    switch rule {
                    case .trim: entry["trim"] = .bool(true)
                    case .min(let bound): entry["min"] = .double(bound)
                    case .max(let bound): entry["max"] = .double(bound)
                    case .minLength(let length): entry["minLength"] = .int(Int64(length))
                    case .maxLength(let length): entry["maxLength"] = .int(Int64(length))
                    case .pattern(let pattern): entry["pattern"] = .string(pattern)
                    case .oneOf(let values): entry["enum"] = .array(values.map(\.jsonValue))
                    }
                }
                let increments = stored.sideEffects.compactMap { effect -> JSONValue? in
                    if case .increment(let key, _) = effect { return .string(key) }
                    return nil
                }
                if !increments.isEmpty { entry["increments"] = .array(increments) }
            case .computed(let computed):
                entry["computed"] = computed.expressionText.map(JSONValue.string) ?? .string("(Swift)")
                entry["dependencies"] = .array(computed.dependencies.map(JSONValue.string))
            }
            properties[property.name] = .object(entry)
        }
        description["properties"] = .object(properties)
        return .object(description)
    }
}
