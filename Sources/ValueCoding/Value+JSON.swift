// Bridging the engine's values and the wire's JSON: a JSON object becomes a record (a new object) unless it is a
// reference `{"$ref": ID}`; on the way out a record is written with its `"$id"` first, and a second visit of an
// object as `{"$ref": ID}`. Output is written straight into byte buffers; no intermediate JSON tree.
public import ObjectGraph
public import WireProtocol

extension Value {
    /// The engine value for a JSON value from a request. `"$id"` members are ignored (a `get` result can be sent
    /// back as is); `{"$ref": ID}` links an existing object.
    public init(json: JSONValue) {
        switch json {
        case .null: self = .null
        case .bool(let flag): self = .bool(flag)
        case .int(let number): self = .int(number)
        case .double(let number): self = .double(number)
        case .string(let text): self = .string(text)
        case .array(let elements): self = .array(elements.map(Value.init(json:)))
        case .object(let object):
            if case .int(let id)? = object["$ref"], object.keys.allSatisfy({ $0 == "$ref" || $0 == "$id" }) {
                self = .object(ObjectID(truncatingIfNeeded: id))
                return
            }
            var record = Record()
            record.keys.reserveCapacity(object.count)
            record.values.reserveCapacity(object.count)
            for (key, value) in object.members where key != "$id" {
                record.keys.append(key)
                record.values.append(Value(json: value))
            }
            self = .record(record)
        }
    }

    /// Appends the value as JSON text.
    public func appendJSON(to buffer: inout [UInt8]) {
        switch self {
        case .null: buffer.append(contentsOf: Self.nullBytes)
        case .bool(let flag): buffer.append(contentsOf: flag ? Self.trueBytes : Self.falseBytes)
        case .int(let number): JSONWriter.appendInt(number, to: &buffer)
        case .double(let number): JSONWriter.appendDouble(number, to: &buffer)
        case .string(let text): JSONWriter.appendString(text, to: &buffer)
        case .array(let elements):
            buffer.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { buffer.append(UInt8(ascii: ",")) }
                element.appendJSON(to: &buffer)
            }
            buffer.append(UInt8(ascii: "]"))
        case .object(let id):
            buffer.append(contentsOf: Self.refPrefix)
            JSONWriter.appendInt(Int64(id), to: &buffer)
            buffer.append(UInt8(ascii: "}"))
        case .record(let record):
            buffer.append(UInt8(ascii: "{"))
            var first = true
            if let id = record.id {
                buffer.append(contentsOf: Self.idPrefix)
                JSONWriter.appendInt(Int64(id), to: &buffer)
                first = false
            }
            for (key, value) in zip(record.keys, record.values) {
                if !first { buffer.append(UInt8(ascii: ",")) }
                first = false
                JSONWriter.appendString(key, to: &buffer)
                buffer.append(UInt8(ascii: ":"))
                value.appendJSON(to: &buffer)
            }
            buffer.append(UInt8(ascii: "}"))
        }
    }

    /// The value as a JSON tree, for slow paths (describe, snapshots) that build trees.
    public var jsonValue: JSONValue {
        switch self {
        case .null: return .null
        case .bool(let flag): return .bool(flag)
        case .int(let number): return .int(number)
        case .double(let number): return .double(number)
        case .string(let text): return .string(text)
        case .array(let elements): return .array(elements.map(\.jsonValue))
        case .object(let id): return .object(JSONObject(["$ref": .int(Int64(id))]))
        case .record(let record):
            var object = JSONObject()
            if let id = record.id { object["$id"] = .int(Int64(id)) }
            for (key, value) in zip(record.keys, record.values) { object[key] = value.jsonValue }
            return .object(object)
        }
    }

    private static let nullBytes = Array("null".utf8)
    private static let trueBytes = Array("true".utf8)
    private static let falseBytes = Array("false".utf8)
    private static let refPrefix = Array("{\"$ref\":".utf8)
    private static let idPrefix = Array("\"$id\":".utf8)
}
