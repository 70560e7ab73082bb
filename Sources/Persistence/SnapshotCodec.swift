// The snapshot file's format: one JSON document,
//   {"format":"kvod-snapshot","version":1,"seq":N,"nextObjectID":M,"objects":[{"id":0,"class":"Root","keys":{...},
//    "modSeqs":[...]}],"deadlines":[{"id":1,"key":"token","expiresAt":T}]}
// (modSeqs parallel to the keys; absent in older files: the keys count as stored at seq N. deadlines: the keys that
// expire, T in Unix epoch milliseconds; written only when there are some, absent in older files: none) with values
// as on the wire (objects as {"$ref": ID}). Written atomically (write, fsync, rename).
public import ObjectGraph
import ValueCoding
import WireProtocol

/// Encodes and decodes graph snapshots.
public enum SnapshotCodec {
    static let format = "kvod-snapshot"
    static let version: Int64 = 1

    /// The snapshot as JSON bytes.
    public static func encode(_ snapshot: GraphSnapshot) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.append(contentsOf: #"{"format":"kvod-snapshot","version":1,"seq":"#.utf8)
        JSONWriter.appendInt(Int64(snapshot.seq), to: &bytes)
        bytes.append(contentsOf: #","nextObjectID":"#.utf8)
        JSONWriter.appendInt(Int64(snapshot.nextObjectID), to: &bytes)
        bytes.append(contentsOf: #","objects":["#.utf8)
        for (index, object) in snapshot.objects.enumerated() {
            bytes.append(contentsOf: index == 0 ? "\n{".utf8 : ",\n{".utf8)
            bytes.append(contentsOf: #""id":"#.utf8)
            JSONWriter.appendInt(Int64(object.id), to: &bytes)
            bytes.append(contentsOf: #","class":"#.utf8)
            JSONWriter.appendString(object.className, to: &bytes)
            bytes.append(contentsOf: #","keys":{"#.utf8)
            for (position, (key, value)) in zip(object.keys, object.values).enumerated() {
                if position > 0 { bytes.append(UInt8(ascii: ",")) }
                JSONWriter.appendString(key, to: &bytes)
                bytes.append(UInt8(ascii: ":"))
                value.appendJSON(to: &bytes)
            }
            bytes.append(UInt8(ascii: "}"))
            if let modSeqs = object.modSeqs {
                bytes.append(contentsOf: #","modSeqs":["#.utf8)
                for (position, modSeq) in modSeqs.enumerated() {
                    if position > 0 { bytes.append(UInt8(ascii: ",")) }
                    JSONWriter.appendInt(Int64(modSeq), to: &bytes)
                }
                bytes.append(UInt8(ascii: "]"))
            }
            bytes.append(UInt8(ascii: "}"))
        }
        bytes.append(UInt8(ascii: "]"))
        if !snapshot.deadlines.isEmpty {
            bytes.append(contentsOf: #","deadlines":["#.utf8)
            for (index, deadline) in snapshot.deadlines.enumerated() {
                bytes.append(contentsOf: index == 0 ? "\n{".utf8 : ",\n{".utf8)
                bytes.append(contentsOf: #""id":"#.utf8)
                JSONWriter.appendInt(Int64(deadline.object), to: &bytes)
                bytes.append(contentsOf: #","key":"#.utf8)
                JSONWriter.appendString(deadline.key, to: &bytes)
                bytes.append(contentsOf: #","expiresAt":"#.utf8)
                // Epoch milliseconds fit an Int64 for the next 290 million years.
                JSONWriter.appendInt(Int64(clamping: deadline.expiresAt), to: &bytes)
                bytes.append(UInt8(ascii: "}"))
            }
            bytes.append(UInt8(ascii: "]"))
        }
        bytes.append(contentsOf: "}\n".utf8)
        return bytes
    }

    /// Parses snapshot bytes.
    public static func decode(_ bytes: [UInt8]) throws(PersistenceError) -> GraphSnapshot {
        let document: JSONValue
        do {
            document = try JSONParser.parse(bytes, maxDepth: 1024)
        } catch {
            throw PersistenceError("the snapshot is not valid JSON: \(error)")
        }
        guard case .string(Self.format)? = document["format"], case .int(Self.version)? = document["version"] else {
            throw PersistenceError("not a kvod snapshot of version \(Self.version)")
        }
        guard case .int(let seq)? = document["seq"], seq >= 0, case .int(let next)? = document["nextObjectID"],
            case .array(let items)? = document["objects"]
        else {
            throw PersistenceError("the snapshot lacks seq, nextObjectID or objects")
        }
        var objects: [GraphSnapshot.Object] = []
        objects.reserveCapacity(items.count)
        for item in items {
            guard case .int(let id)? = item["id"], case .string(let className)? = item["class"],
                case .object(let keys)? = item["keys"]
            else {
                throw PersistenceError("a snapshot object lacks id, class or keys")
            }
            var modSeqs: [UInt64]?
            if case .array(let items)? = item["modSeqs"] {
                let numbers = items.compactMap { $0.intValue }.filter { $0 >= 0 }.map { UInt64($0) }
                guard numbers.count == items.count, numbers.count == keys.keys.count else {
                    throw PersistenceError("a snapshot object's modSeqs do not match its keys")
                }
                modSeqs = numbers
            }
            objects.append(
                GraphSnapshot.Object(
                    id: ObjectID(id), className: className, keys: keys.keys, values: keys.values.map(Value.init(json:)),
                    modSeqs: modSeqs))
        }
        var deadlines: [Deadline] = []
        if let raw = document["deadlines"] {
            guard case .array(let items) = raw else {
                throw PersistenceError("the snapshot's deadlines are not an array")
            }
            for item in items {
                guard case .int(let id)? = item["id"], id >= 0, case .string(let key)? = item["key"],
                    case .int(let expiresAt)? = item["expiresAt"], expiresAt >= 0
                else {
                    throw PersistenceError("a snapshot deadline lacks id, key or expiresAt")
                }
                deadlines.append(Deadline(object: ObjectID(id), key: key, expiresAt: UInt64(expiresAt)))
            }
        }
        return GraphSnapshot(seq: UInt64(seq), nextObjectID: ObjectID(next), objects: objects, deadlines: deadlines)
    }
}
