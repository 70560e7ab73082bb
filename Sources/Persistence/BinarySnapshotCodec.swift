// The snapshot file's format (`snapshot.kvs`), chosen for load speed: binary, names written once, a checksum.
//   "KVODSNAP"  version:u32  seq:u64  nextObjectID:u64                        (little-endian)
//   classes: count, then each name     keys: count, then each name            (varint length + UTF-8)
//   objects: count, then each: id, class index, key count, then (key index, value) per key
//   deadlines (version 3): count, then each: object id, key index, expiresAt (Unix epoch milliseconds)
//   crc32:u32 of every byte before it
// Each (key index, value) pair is followed by the key's modSeq. Counts, ids, indexes, lengths and modSeqs are LEB128
// varints. A value is a tag byte and its payload: 0 null, 1 false,
// 2 true, 3 int (zigzag varint), 4 double (8 bytes), 5 string (length + UTF-8), 6 array (count + values),
// 7 object reference (id), 8 record (count, then key name + value per key). Decoding checks the checksum first and
// then every bound, so a damaged or truncated file is refused with a message, never read past its end. Version 2
// (before deadlines) still decodes, with no deadlines; version 3 is written.
public import ObjectGraph

/// Encodes and decodes graph snapshots in kvod's binary format.
public enum BinarySnapshotCodec {
    static let magic = Array("KVODSNAP".utf8)
    static let version: UInt32 = 3
    /// The versions this kvod reads: 2 has no deadlines.
    static let readableVersions: ClosedRange<UInt64> = 2...3
    /// Arrays nested deeper than this are refused when decoding (values are never nested deeper than a `set` allows).
    static let maxDepth = 1024

    /// True when `bytes` start like a binary snapshot (as opposed to the older JSON format).
    public static func isBinary(_ bytes: [UInt8]) -> Bool {
        bytes.count >= magic.count && Array(bytes[0..<magic.count]) == magic
    }

    // MARK: - Encoding

    /// The snapshot as bytes.
    public static func encode(_ snapshot: GraphSnapshot) -> [UInt8] {
        let parts = Self.encodeParts(snapshot)
        var file: [UInt8] = []
        file.reserveCapacity(parts.reduce(0) { $0 + $1.count })
        for part in parts { file.append(contentsOf: part) }
        return file
    }

    /// The snapshot as parts whose concatenation is the file (the header with the names, the objects, the checksum),
    /// for a writer that writes them one after another: the objects' bytes, nearly all of a snapshot, are never
    /// copied into a second buffer (a page of fresh memory costs more than its bytes' encoding).
    public static func encodeParts(_ snapshot: GraphSnapshot) -> [[UInt8]] {
        var classes: [String: Int] = [:]
        var classNames: [String] = []
        var (widest, keyCount) = (0, 0)
        for object in snapshot.objects {
            widest = max(widest, object.keys.count)
            keyCount += object.keys.count
        }
        // Objects mostly share their key names, so the widest object's count is a good guess of how many distinct
        // names there are (an open root holding a key per object is the widest): the table seldom grows while it fills.
        var keys: [String: Int] = Dictionary(minimumCapacity: widest + 16)
        var keyNames: [String] = []
        keyNames.reserveCapacity(widest + 16)
        var body = Writer()
        // Room for what the objects usually take (a few bytes an object, a short name's index, a small value and a
        // modSeq a key); pages reserved and not written cost nothing, a buffer that grows copies itself.
        body.bytes.reserveCapacity(snapshot.objects.count * 8 + keyCount * 24 + 64)
        // Objects of one class mostly come one after another with the same names: comparing them with the last
        // object's (a word or two per short name) spares hashing each of them again.
        var lastClass = ""
        var lastClassIndex = -1
        var lastKeys: [String] = []
        var lastKeyIndexes: [Int] = []
        body.varint(UInt64(snapshot.objects.count))
        for object in snapshot.objects {
            body.varint(UInt64(object.id))
            if lastClassIndex < 0 || object.className != lastClass {
                lastClass = object.className
                lastClassIndex = Self.index(of: object.className, in: &classes, names: &classNames)
            }
            body.varint(UInt64(lastClassIndex))
            body.varint(UInt64(object.keys.count))
            if object.keys != lastKeys {
                lastKeys = object.keys
                lastKeyIndexes = object.keys.map { Self.index(of: $0, in: &keys, names: &keyNames) }
            }
            for index in object.keys.indices {
                body.varint(UInt64(lastKeyIndexes[index]))
                body.value(object.values[index])
                body.varint(object.modSeqs?[index] ?? snapshot.seq)
            }
        }
        body.varint(UInt64(snapshot.deadlines.count))
        for deadline in snapshot.deadlines {
            body.varint(UInt64(deadline.object))
            body.varint(UInt64(Self.index(of: deadline.key, in: &keys, names: &keyNames)))
            body.varint(deadline.expiresAt)
        }
        var head = Writer()
        head.bytes.reserveCapacity(64 + (classNames.count + keyNames.count) * 16)
        head.bytes.append(contentsOf: Self.magic)
        head.fixed(UInt64(Self.version), bytes: 4)
        head.fixed(snapshot.seq, bytes: 8)
        head.fixed(UInt64(snapshot.nextObjectID), bytes: 8)
        for names in [classNames, keyNames] {
            head.varint(UInt64(names.count))
            for name in names { head.string(name) }
        }
        let checksum = body.bytes.withUnsafeBytes { body in
            head.bytes.withUnsafeBytes { CRC32.checksum(body, continuing: CRC32.checksum($0)) }
        }
        var trailer = Writer()
        trailer.fixed(UInt64(checksum), bytes: 4)
        return [head.bytes, body.bytes, trailer.bytes]
    }

    /// The index of `name` in `names`, appended when new: one hash of the name either way.
    private static func index(of name: String, in table: inout [String: Int], names: inout [String]) -> Int {
        let next = names.count
        let index = Self.entry(&table[name, default: next])
        if index == next { names.append(name) }
        return index
    }

    /// Reads an entry through the dictionary's in-place accessor, which inserts the default when the key is missing.
    @inline(__always)
    private static func entry(_ value: inout Int) -> Int { value }

    private struct Writer {
        var bytes: [UInt8] = []

        mutating func fixed(_ value: UInt64, bytes count: Int) {
            for shift in 0..<count { self.bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift * 8))) }
        }

        mutating func varint(_ value: UInt64) {
            var rest = value
            while rest >= 0x80 {
                self.bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
                rest >>= 7
            }
            self.bytes.append(UInt8(rest))
        }

        mutating func string(_ text: String) {
            var text = text
            text.withUTF8 { utf8 in
                self.varint(UInt64(utf8.count))
                self.bytes.append(contentsOf: utf8)
            }
        }

        mutating func value(_ value: Value) {
            switch value {
            case .null: self.bytes.append(0)
            case .bool(let flag): self.bytes.append(flag ? 2 : 1)
            case .int(let number):
                self.bytes.append(3)
                self.varint(UInt64(bitPattern: (number << 1) ^ (number >> 63)))
            case .double(let number) where !number.isFinite:
                self.bytes.append(0)  // never stored (values are finite); written as null, which loads, not as a poison
            case .double(let number):
                self.bytes.append(4)
                self.fixed(number.bitPattern, bytes: 8)
            case .string(let text):
                self.bytes.append(5)
                self.string(text)
            case .array(let elements):
                self.bytes.append(6)
                self.varint(UInt64(elements.count))
                for element in elements { self.value(element) }
            case .object(let id):
                self.bytes.append(7)
                self.varint(UInt64(id))
            case .record(let record):
                self.bytes.append(8)
                self.varint(UInt64(record.keys.count))
                for (key, element) in zip(record.keys, record.values) {
                    self.string(key)
                    self.value(element)
                }
            }
        }
    }

    // MARK: - Decoding

    /// Parses snapshot bytes.
    /// - Throws: a message naming what is wrong: not this format, another version, a checksum mismatch (damage), or a
    ///   structure that does not add up.
    public static func decode(_ bytes: [UInt8]) throws(PersistenceError) -> GraphSnapshot {
        var header: (seq: UInt64, next: ObjectID) = (0, 0)
        var objects: [GraphSnapshot.Object] = []
        var deadlines: [Deadline] = []
        do {
            try Self.parse(
                bytes, header: { header = ($0, $1) }, object: { objects.append($0) },
                deadline: { deadlines.append($0) })
        } catch let error as PersistenceError {
            throw error
        } catch {
            throw PersistenceError("\(error)")
        }
        return GraphSnapshot(seq: header.seq, nextObjectID: header.next, objects: objects, deadlines: deadlines)
    }

    /// Restores a graph straight from snapshot bytes, one object at a time: the decoded snapshot is never held whole
    /// beside the graph it becomes (restart time and memory: docs/PERFORMANCE.md#snapshots).
    /// - Throws: `PersistenceError` for bytes that do not decode, `SnapshotError` for a snapshot that does not fit
    ///   the model.
    public static func restore(_ bytes: [UInt8], model: Model) throws -> Graph {
        var restorer: GraphRestorer?
        try Self.parse(
            bytes, header: { restorer = GraphRestorer(model: model, seq: $0, nextObjectID: $1) },
            object: { try restorer!.add($0) }, deadline: { try restorer!.add($0) })  // header comes first
        return try restorer!.graph()
    }

    /// The seq in the header, without checking anything else (for logs and to pick the journal records to replay;
    /// decoding checks the whole file).
    static func peekSeq(_ bytes: [UInt8]) -> UInt64? {
        guard Self.isBinary(bytes), bytes.count >= Self.magic.count + 12 else { return nil }
        var seq: UInt64 = 0
        for shift in 0..<8 { seq |= UInt64(bytes[Self.magic.count + 4 + shift]) << UInt64(shift * 8) }
        return seq
    }

    private static func parse(
        _ bytes: [UInt8], header: (UInt64, ObjectID) throws -> Void, object: (GraphSnapshot.Object) throws -> Void,
        deadline: (Deadline) throws -> Void
    ) throws {
        guard Self.isBinary(bytes) else { throw PersistenceError("not a kvod binary snapshot") }
        guard bytes.count >= Self.magic.count + 4 + 8 + 8 + 4 else { throw PersistenceError("the snapshot is truncated") }
        let bodyEnd = bytes.count - 4
        var stored: UInt32 = 0
        for shift in 0..<4 { stored |= UInt32(bytes[bodyEnd + shift]) << UInt32(shift * 8) }
        guard bytes.withUnsafeBytes({ CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<bodyEnd])) }) == stored else {
            throw PersistenceError("the snapshot's checksum does not match: the file is damaged or truncated")
        }
        try bytes.withUnsafeBufferPointer { buffer throws in
            var reader = Reader(bytes: UnsafeBufferPointer(rebasing: buffer[0..<bodyEnd]), offset: Self.magic.count)
            let version = try reader.fixed(4)
            guard Self.readableVersions.contains(version) else {
                let (oldest, newest) = (Self.readableVersions.lowerBound, Self.readableVersions.upperBound)
                throw PersistenceError(
                    "a snapshot of version \(version); this kvod reads versions \(oldest) to \(newest)")
            }
            let seq = try reader.fixed(8)
            let next = try reader.fixed(8)
            guard next <= UInt64(Int.max) else { throw PersistenceError("the snapshot's next object id is out of range") }
            try header(seq, ObjectID(next))
            let classNames = try reader.names()
            let keyNames = try reader.names()
            let count = try reader.count()
            for _ in 0..<count {
                let id = try reader.id()
                let className = try reader.name(in: classNames)
                let keyCount = try reader.count()
                var keys: [String] = []
                var values: [Value] = []
                var modSeqs: [UInt64] = []
                keys.reserveCapacity(keyCount)
                values.reserveCapacity(keyCount)
                modSeqs.reserveCapacity(keyCount)
                for _ in 0..<keyCount {
                    keys.append(try reader.name(in: keyNames))
                    values.append(try reader.value(depth: 0))
                    modSeqs.append(try reader.varint())
                }
                try object(
                    GraphSnapshot.Object(id: id, className: className, keys: keys, values: values, modSeqs: modSeqs))
            }
            if version >= 3 {
                for _ in 0..<(try reader.count()) {
                    let id = try reader.id()
                    let key = try reader.name(in: keyNames)
                    try deadline(Deadline(object: id, key: key, expiresAt: try reader.varint()))
                }
            }
            guard reader.offset == reader.bytes.count else {
                throw PersistenceError("the snapshot has \(reader.bytes.count - reader.offset) unexpected bytes at its end")
            }
        }
    }

    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var offset: Int

        static let truncated = PersistenceError("the snapshot is truncated")

        mutating func byte() throws(PersistenceError) -> UInt8 {
            guard self.offset < self.bytes.count else { throw Self.truncated }
            defer { self.offset += 1 }
            return self.bytes[self.offset]
        }

        mutating func fixed(_ count: Int) throws(PersistenceError) -> UInt64 {
            guard self.bytes.count - self.offset >= count else { throw Self.truncated }
            var value: UInt64 = 0
            for shift in 0..<count { value |= UInt64(self.bytes[self.offset + shift]) << UInt64(shift * 8) }
            self.offset += count
            return value
        }

        mutating func varint() throws(PersistenceError) -> UInt64 {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                let byte = try self.byte()
                guard shift < 64, shift < 63 || byte <= 1 else { throw PersistenceError("a number in the snapshot overflows") }
                value |= UInt64(byte & 0x7F) << shift
                if byte < 0x80 { return value }
                shift += 7
            }
        }

        /// A count: at most the bytes left (every counted item takes at least one byte), so a damaged count can
        /// never make the decoder reserve or loop beyond the file.
        mutating func count() throws(PersistenceError) -> Int {
            let value = try self.varint()
            guard value <= UInt64(self.bytes.count - self.offset) else { throw Self.truncated }
            return Int(value)
        }

        /// An object id (the graph checks it against the snapshot's next object id).
        mutating func id() throws(PersistenceError) -> Int {
            try Self.checkedID(try self.varint())
        }

        static func checkedID(_ value: UInt64) throws(PersistenceError) -> Int {
            guard value <= UInt64(Int.max) else { throw PersistenceError("an object id in the snapshot is out of range") }
            return Int(value)
        }

        mutating func text() throws(PersistenceError) -> String {
            let length = try self.varint()
            guard length <= UInt64(self.bytes.count - self.offset) else { throw Self.truncated }
            let slice = UnsafeBufferPointer(rebasing: self.bytes[self.offset..<(self.offset + Int(length))])
            self.offset += Int(length)
            // The checksum already vouched for these bytes, which kvod wrote from Swift strings: decoding needs no
            // second validation pass (a damaged byte that slipped past it would become U+FFFD, never a crash).
            return String(decoding: slice, as: UTF8.self)
        }

        mutating func names() throws(PersistenceError) -> [String] {
            let count = try self.varint()
            guard count <= UInt64(self.bytes.count - self.offset) else { throw Self.truncated }
            var names: [String] = []
            names.reserveCapacity(Int(count))
            for _ in 0..<count { names.append(try self.text()) }
            return names
        }

        mutating func name(in names: [String]) throws(PersistenceError) -> String {
            let index = try self.varint()
            guard index < UInt64(names.count) else { throw PersistenceError("a name index in the snapshot is out of range") }
            return names[Int(index)]
        }

        mutating func value(depth: Int) throws(PersistenceError) -> Value {
            guard depth < BinarySnapshotCodec.maxDepth else { throw PersistenceError("a value in the snapshot nests too deep") }
            switch try self.byte() {
            case 0: return .null
            case 1: return .bool(false)
            case 2: return .bool(true)
            case 3:
                let zigzag = try self.varint()
                return .int(Int64(bitPattern: zigzag >> 1) ^ -Int64(bitPattern: zigzag & 1))
            case 4:
                let number = Double(bitPattern: try self.fixed(8))
                guard number.isFinite else { throw PersistenceError("a number in the snapshot is not finite") }
                return .double(number)
            case 5: return .string(try self.text())
            case 6:
                let count = try self.varint()
                guard count <= UInt64(self.bytes.count - self.offset) else { throw Self.truncated }
                var elements: [Value] = []
                elements.reserveCapacity(Int(count))
                for _ in 0..<count { elements.append(try self.value(depth: depth + 1)) }
                return .array(elements)
            case 7: return .object(try self.id())
            case 8:
                let count = try self.varint()
                guard count <= UInt64(self.bytes.count - self.offset) else { throw Self.truncated }
                var record = Record()
                for _ in 0..<count {
                    record.keys.append(try self.text())
                    record.values.append(try self.value(depth: depth + 1))
                }
                return .record(record)
            case let tag: throw PersistenceError("unknown value tag \(tag) in the snapshot")
            }
        }
    }
}
