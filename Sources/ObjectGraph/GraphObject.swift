// One object in the graph: its class and its stored values in one malloc'd block, seen through a `GraphObject` (its
// id and the address of its slot in the object table, which holds the block's address). It knows nothing of
// observation or validation; the graph changes it only inside a commit (Graph+Commit.swift) so that observers are told.
//
// The block is a header — the class (a retained reference), the capacity, the bytes used and the entry count with a
// flag for an indexed object, then, in an indexed object, the address of its key index — and the packed entries in
// key order (like Redis's listpack), read and written in place; docs/ARCHITECTURE.md#objects-in-memory draws one.
// An entry is
//
//     key length (varint) | key (UTF-8) | modSeq | region length (1 byte) | region: the value (PackedValue)
//
// where the modSeq is a varint in a small object (3 bytes up to seq 2,097,151) and a fixed field in an indexed one
// (written in place: 4 bytes, or 8 once a seq past 2^32 is stored there). A value that does not fit its region makes
// a small object move the bytes after it (a few dozen bytes); an object with an index keeps every entry where it is
// (the index holds offsets) and boxes the value instead, so each of its regions is at least `PackedValue.boxedSize`
// bytes. Up to `indexThreshold` keys a key is found by scanning the entries (a few byte compares); past it, through an
// open-addressing index of entry offsets (4 bytes a slot, at most 3/4 full) hashed with the standard library's seeded
// Hasher. Keys are never removed, except by undo, which removes the key it added. Blocks are not counted references:
// the object table frees one when it drops the object (ObjectTable.swift), so a `GraphObject` is valid only while its
// object is in the table.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An object in a graph: a view of its block through its table slot (so a block that moves as it grows stays
/// reachable). Valid while the object is in its table. Loop-owned by whoever owns the graph.
struct GraphObject {
    let id: ObjectID
    /// The table slot holding the address of the object's block (never nil while the object lives).
    let slot: UnsafeMutablePointer<UnsafeMutableRawPointer?>

    /// Up to this many keys an object has no index.
    static let indexThreshold = 12

    /// A stored value and the seq of the mutation that last stored it (its modSeq, for conditional writes).
    struct Slot {
        var value: Value
        var modSeq: UInt64
    }

    /// The view of the object whose block's address is in `slot`.
    @inline(__always)
    init(id: ObjectID, slot: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        self.id = id
        self.slot = slot
    }

    /// The packed entries (see above). (The slot's memory is the table's: see ObjectTable.)
    @inline(__always)
    private var storage: UnsafeMutableRawPointer {
        get { self.slot.pointee.unsafelyUnwrapped }
        nonmutating set { self.slot.pointee = newValue }
    }

    /// The object's class.
    var objectClass: ObjectClass {
        @inline(__always) get {
            Unmanaged<ObjectClass>.fromOpaque(self.storage.load(as: UnsafeRawPointer.self)).takeUnretainedValue()
        }
    }

    // MARK: - Blocks

    /// A new object's block, with room for `capacity` bytes (header included; at least the header).
    static func makeBlock(_ objectClass: ObjectClass, capacity: Int = 0) -> UnsafeMutableRawPointer {
        let size = max(capacity, Self.headerSize)
        precondition(size <= Int(UInt32.max), "an object's entries are limited to 4 GiB")
        let base = malloc(size)!
        base.storeBytes(of: Unmanaged.passRetained(objectClass).toOpaque(), as: UnsafeMutableRawPointer.self)
        base.storeBytes(of: UInt32(size), toByteOffset: 8, as: UInt32.self)
        base.storeBytes(of: UInt32(Self.headerSize), toByteOffset: 12, as: UInt32.self)
        base.storeBytes(of: UInt32(0), toByteOffset: 16, as: UInt32.self)
        return base
    }

    /// Frees a block `makeBlock` made: its boxes, its index, its class reference and its bytes.
    static func freeBlock(_ base: UnsafeMutableRawPointer) {
        var slot: UnsafeMutableRawPointer? = base
        withUnsafeMutablePointer(to: &slot) { slot in
            let object = GraphObject(id: 0, slot: slot)
            object.forEachEntry { base, entry in Self.releaseBox(base, entry.regionStart) }
            if let index = object.index { free(index) }
        }
        Unmanaged<ObjectClass>.fromOpaque(base.load(as: UnsafeRawPointer.self)).release()
        free(base)
    }

    /// The bytes an entry for `key` holding `value` with `modSeq` takes in a small object (a boxed value counted as
    /// boxed), for sizing a block before its keys are set.
    static func entrySize(_ key: String, _ value: Value, modSeq: UInt64) -> Int {
        let keyLength = key.utf8.count
        let regionLength = PackedValue.inlineSize(value) ?? PackedValue.boxedSize
        return Self.varintSize(UInt64(keyLength)) + keyLength + Self.varintSize(modSeq) + 1 + regionLength
    }

    // MARK: - Reading

    /// The number of keys.
    var count: Int { Int(self.header(16) & Self.countMask) }

    /// The keys in order.
    var keys: [String] {
        var keys: [String] = []
        keys.reserveCapacity(self.count)
        self.forEachEntry { base, entry in keys.append(Self.key(base, entry)) }
        return keys
    }

    /// The stored values in key order.
    var values: [Value] {
        var values: [Value] = []
        values.reserveCapacity(self.count)
        self.forEachEntry { base, entry in values.append(Self.value(base, entry.regionStart)) }
        return values
    }

    /// The modSeqs in key order.
    var modSeqs: [UInt64] {
        var modSeqs: [UInt64] = []
        modSeqs.reserveCapacity(self.count)
        self.forEachEntry { base, entry in modSeqs.append(Self.modSeq(base, entry)) }
        return modSeqs
    }

    /// Calls `body` with each key and its value, in key order (no lookups).
    func forEachValue(_ body: (String, Value) throws -> Void) rethrows {
        let width = self.modSeqWidth
        var offset = self.entriesStart
        while offset < self.used {
            let base = self.storage
            let entry = Self.entry(base, at: offset, modSeqWidth: width)
            try body(Self.key(base, entry), Self.value(base, entry.regionStart))
            offset = entry.end
        }
    }

    /// Calls `body` with the id of each object a stored value refers to, in key order (decoding nothing else).
    func forEachReference(_ body: (ObjectID) -> Void) {
        self.forEachEntry { base, entry in
            if base.load(fromByteOffset: entry.regionStart, as: UInt8.self) == PackedValue.Tag.boxed.rawValue {
                Graph.forEachReferenceIn(Self.value(base, entry.regionStart), body)
            } else {
                PackedValue.forEachReference(at: base + entry.regionStart, body)
            }
        }
    }

    /// The stored value, or nil when the key was never set.
    @inline(__always)
    func value(forKey key: String) -> Value? {
        guard let entry = self.locate(key).entry else { return nil }
        let base = self.storage
        return Self.value(base, entry.regionStart)
    }

    /// Moves `key`'s value out of its box, leaving null there until the next `setValue`, so that the caller holds
    /// the only reference to it and can change it in place (a collection mutation: ValueList copies the nodes it
    /// changes only when something else still holds them). An inline value is read as usual.
    func takeValue(forKey key: String) -> Value? {
        guard let entry = self.locate(key).entry else { return nil }
        let base = self.storage
        guard base.load(fromByteOffset: entry.regionStart, as: UInt8.self) == PackedValue.Tag.boxed.rawValue else {
            return Self.value(base, entry.regionStart)
        }
        let bits = base.loadUnaligned(fromByteOffset: entry.regionStart + 1, as: UInt.self)
        let box = Unmanaged<ValueBox>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).takeUnretainedValue()
        defer { box.value = .null }
        return box.value
    }

    /// The seq of the mutation that last stored `key`, or nil when the key was never set.
    func modSeq(forKey key: String) -> UInt64? {
        guard let entry = self.locate(key).entry else { return nil }
        let base = self.storage
        return Self.modSeq(base, entry)
    }

    /// The stored value with its modSeq (for undo), or nil when the key was never set.
    func slot(forKey key: String) -> Slot? {
        guard let entry = self.locate(key).entry else { return nil }
        let base = self.storage
        return Slot(value: Self.value(base, entry.regionStart), modSeq: Self.modSeq(base, entry))
    }

    /// The box holding `key`'s value, or nil when it is stored inline or was never set (for tests of ownership).
    func box(forKey key: String) -> ValueBox? {
        guard let entry = self.locate(key).entry else { return nil }
        let base = self.storage
        guard base.load(fromByteOffset: entry.regionStart, as: UInt8.self) == PackedValue.Tag.boxed.rawValue else {
            return nil
        }
        let bits = base.loadUnaligned(fromByteOffset: entry.regionStart + 1, as: UInt.self)
        return Unmanaged<ValueBox>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).takeUnretainedValue()
    }

    // MARK: - Writing

    /// Stores a value. A new key goes to the end of the key order, except that a key the class declares goes
    /// among the declared keys in declaration order (so `get` shows a typed object's keys as its class lists them).
    func setValue(_ value: Value, forKey key: String, modSeq: UInt64) {
        if modSeq > UInt32.max && self.modSeqWidth == 4 { self.makeIndexed(modSeqWidth: 8) }
        let (entry, hash) = self.locate(key)
        if let entry {
            self.overwrite(entry, value, modSeq: modSeq)
        } else {
            self.insert(key, hash: hash, value, modSeq: modSeq)
        }
    }

    /// Puts a key back as it was (undo): `previous` nil removes the key.
    func restore(_ key: String, to previous: Slot?) {
        if let previous {
            self.setValue(previous.value, forKey: key, modSeq: previous.modSeq)
            return
        }
        let (found, hash) = self.locate(key)
        guard let entry = found else { return }
        let base = self.storage
        let offset = entry.start
        Self.releaseBox(base, entry.regionStart)
        let used = self.used
        let last = entry.end == used
        if self.index != nil && last { self.indexRemove(offset, hash: hash) }
        (base + offset).copyMemory(from: base + entry.end, byteCount: used - entry.end)
        self.setHeader(12, UInt32(used - (entry.end - offset)))
        self.setHeader(16, self.header(16) - 1)
        // Undo removes the key it added, which is the last one, unless it was a declared key of a large object.
        if self.index != nil && !last { self.rebuildIndex() }
    }

    private func overwrite(_ entry: Entry, _ value: Value, modSeq: UInt64) {
        var base = self.storage
        let indexed = entry.modSeqWidth != 0
        if !indexed, case .int(let number) = value, self.overwriteInt(entry, number, modSeq: modSeq) { return }
        Self.releaseBox(base, entry.regionStart)
        let size = PackedValue.inlineSize(value)
        if indexed {
            // Entries of an indexed object stay where they are: a value that outgrows its region is boxed.
            Self.writeFixed(modSeq, base, entry)
            if let size, size <= entry.regionLength {
                PackedValue.write(value, at: base + entry.regionStart)
            } else {
                Self.writeBoxed(value, at: base + entry.regionStart)
            }
            return
        }
        // A small object: modSeq and region take their new sizes, the entries after them move.
        let modSeqLength = Self.varintSize(modSeq)
        let length = size ?? PackedValue.boxedSize
        let delta = modSeqLength - entry.modSeqLength + length - entry.regionLength
        if delta != 0 {
            let used = self.used
            if delta > 0 { base = self.reserve(used + delta) }
            (base + entry.end + delta).copyMemory(from: base + entry.end, byteCount: used - entry.end)
            self.setHeader(12, UInt32(used + delta))
        }
        Self.writeVarint(modSeq, at: base + entry.modSeqAt)
        if modSeqLength != entry.modSeqLength || length != entry.regionLength {  // the length byte moved or changed
            base.storeBytes(of: UInt8(length), toByteOffset: entry.modSeqAt + modSeqLength, as: UInt8.self)
        }
        let region = base + entry.modSeqAt + modSeqLength + 1
        if size != nil {
            PackedValue.write(value, at: region)
        } else {
            Self.writeBoxed(value, at: region)
        }
    }

    /// The common overwrite of a small object's int by an int that fits the stored width, with a modSeq of the same
    /// length: two stores, nothing moves. False when it does not apply.
    @inline(__always)
    private func overwriteInt(_ entry: Entry, _ number: Int64, modSeq: UInt64) -> Bool {
        let base = self.storage
        let tag = base.load(fromByteOffset: entry.regionStart, as: UInt8.self)
        guard Self.varintSize(modSeq) == entry.modSeqLength else { return false }
        let at = entry.regionStart + 1
        switch tag {
        case PackedValue.Tag.int8.rawValue:
            guard let narrow = Int8(exactly: number) else { return false }
            base.storeBytes(of: narrow, toByteOffset: at, as: Int8.self)
        case PackedValue.Tag.int16.rawValue:
            guard let narrow = Int16(exactly: number) else { return false }
            base.storeBytes(of: narrow, toByteOffset: at, as: Int16.self)
        case PackedValue.Tag.int32.rawValue:
            guard let narrow = Int32(exactly: number) else { return false }
            base.storeBytes(of: narrow, toByteOffset: at, as: Int32.self)
        case PackedValue.Tag.int64.rawValue:
            base.storeBytes(of: number, toByteOffset: at, as: Int64.self)
        default:
            return false
        }
        Self.writeVarint(modSeq, at: base + entry.modSeqAt)
        return true
    }

    private func insert(_ key: String, hash: Int, _ value: Value, modSeq: UInt64) {
        let size = PackedValue.inlineSize(value)
        var regionLength = size ?? PackedValue.boxedSize
        let width = self.modSeqWidth
        let indexed = width != 0
        if indexed { regionLength = max(regionLength, PackedValue.boxedSize) }
        let keyLength = key.utf8.count
        let modSeqLength = indexed ? width : Self.varintSize(modSeq)
        let entrySize = Self.varintSize(UInt64(keyLength)) + keyLength + modSeqLength + 1 + regionLength
        let used = self.used
        var position = used
        if let rank = self.objectClass.declarationIndex(key) {
            self.forEachEntry { base, entry in
                guard position == used,
                    (self.objectClass.declarationIndex(Self.key(base, entry)) ?? Int.max) > rank
                else { return }
                position = entry.start
            }
        }
        let base = self.reserve(used + entrySize)
        if position < used {
            (base + position + entrySize).copyMemory(from: base + position, byteCount: used - position)
        }
        var at = position + Self.writeVarint(UInt64(keyLength), at: base + position)
        withUTF8(of: key) { bytes in
            if let start = bytes.baseAddress { (base + at).copyMemory(from: start, byteCount: bytes.count) }
        }
        at += keyLength
        if width == 8 {
            base.storeBytes(of: modSeq, toByteOffset: at, as: UInt64.self)
        } else if width == 4 {
            base.storeBytes(of: UInt32(truncatingIfNeeded: modSeq), toByteOffset: at, as: UInt32.self)
        } else {
            Self.writeVarint(modSeq, at: base + at)
        }
        base.storeBytes(of: UInt8(regionLength), toByteOffset: at + modSeqLength, as: UInt8.self)
        let region = base + at + modSeqLength + 1
        let written = size != nil ? PackedValue.write(value, at: region) : Self.writeBoxed(value, at: region)
        if written < regionLength {
            (region + written).initializeMemory(as: UInt8.self, repeating: 0, count: regionLength - written)
        }
        self.setHeader(12, UInt32(used + entrySize))
        self.setHeader(16, self.header(16) + 1)
        if indexed {
            if position == used { self.indexInsert(position, hash: hash) } else { self.rebuildIndex() }
        } else if self.count > Self.indexThreshold {
            self.makeIndexed(modSeqWidth: self.modSeqs.allSatisfy { $0 <= UInt32.max } ? 4 : 8)
        }
    }

    // MARK: - Entries

    /// The header of a small object: class, capacity, bytes used, count (and flags); an indexed one's has the
    /// index's address after it.
    static let headerSize = 20
    private static let indexedHeaderSize = 28
    /// The flag (in the count's word) of an indexed object, whose modSeqs take 4 bytes, or 8 with `wideFlag` (once
    /// a seq past 2^32 is stored: the entries are laid out again).
    private static let indexedFlag: UInt32 = 1 << 31
    private static let wideFlag: UInt32 = 1 << 30
    private static let countMask: UInt32 = (1 << 30) - 1

    /// Where the parts of one entry are (byte offsets from the start of the storage).
    private struct Entry {
        let start: Int
        let keyStart: Int
        let keyLength: Int
        /// 4 or 8 (a fixed modSeq) or the varint's length.
        let modSeqLength: Int
        /// 4 or 8 in an indexed object, 0 (a varint) in a small one.
        let modSeqWidth: Int
        var modSeqAt: Int { self.keyStart + self.keyLength }
        var regionStart: Int { self.keyStart + self.keyLength + self.modSeqLength + 1 }
        let regionLength: Int
        var end: Int { self.regionStart + self.regionLength }
    }

    @inline(__always)
    private static func entry(_ base: UnsafeMutableRawPointer, at offset: Int, modSeqWidth: Int) -> Entry {
        let (length, size) = self.readVarint(base, offset)
        let keyLength = Int(length)
        let keyStart = offset + size
        var modSeqLength = modSeqWidth
        if modSeqWidth == 0 {
            // The varint's length: the first byte without its high bit (at least two bytes follow any modSeq).
            let first = UInt16(littleEndian: base.loadUnaligned(fromByteOffset: keyStart + keyLength, as: UInt16.self))
            if first & 0x80 == 0 {
                modSeqLength = 1
            } else if first & 0x8000 == 0 {
                modSeqLength = 2
            } else {
                modSeqLength = 3
                while base.load(fromByteOffset: keyStart + keyLength + modSeqLength - 1, as: UInt8.self) >= 0x80 {
                    modSeqLength += 1
                }
            }
        }
        return Entry(
            start: offset, keyStart: keyStart, keyLength: keyLength, modSeqLength: modSeqLength,
            modSeqWidth: modSeqWidth,
            regionLength: Int(base.load(fromByteOffset: keyStart + keyLength + modSeqLength, as: UInt8.self)))
    }

    @inline(__always)
    private static func modSeq(_ base: UnsafeMutableRawPointer, _ entry: Entry) -> UInt64 {
        switch entry.modSeqWidth {
        case 8: return base.loadUnaligned(fromByteOffset: entry.modSeqAt, as: UInt64.self)
        case 4: return UInt64(base.loadUnaligned(fromByteOffset: entry.modSeqAt, as: UInt32.self))
        default: return self.readVarint(base, entry.modSeqAt).value
        }
    }

    /// Stores an indexed object's modSeq in place (its width holds it: see `setValue`).
    @inline(__always)
    private static func writeFixed(_ modSeq: UInt64, _ base: UnsafeMutableRawPointer, _ entry: Entry) {
        if entry.modSeqWidth == 8 {
            base.storeBytes(of: modSeq, toByteOffset: entry.modSeqAt, as: UInt64.self)
        } else {
            base.storeBytes(of: UInt32(truncatingIfNeeded: modSeq), toByteOffset: entry.modSeqAt, as: UInt32.self)
        }
    }

    private func forEachEntry(_ body: (UnsafeMutableRawPointer, Entry) -> Void) {
        let base = self.storage
        let width = self.modSeqWidth
        var offset = self.entriesStart
        let used = self.used
        while offset < used {
            let entry = Self.entry(base, at: offset, modSeqWidth: width)
            body(base, entry)
            offset = entry.end
        }
    }

    private static func key(_ base: UnsafeMutableRawPointer, _ entry: Entry) -> String {
        String(decoding: UnsafeRawBufferPointer(start: base + entry.keyStart, count: entry.keyLength), as: UTF8.self)
    }

    @inline(__always)
    private static func value(_ base: UnsafeMutableRawPointer, _ regionStart: Int) -> Value {
        let tag = base.load(fromByteOffset: regionStart, as: UInt8.self)
        if tag == PackedValue.Tag.object32.rawValue {  // the common case of a path's intermediate keys
            return .object(Int(base.loadUnaligned(fromByteOffset: regionStart + 1, as: UInt32.self)))
        }
        if tag == PackedValue.Tag.boxed.rawValue {
            let bits = base.loadUnaligned(fromByteOffset: regionStart + 1, as: UInt.self)
            return Unmanaged<ValueBox>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).takeUnretainedValue().value
        }
        return PackedValue.read(at: base + regionStart).value
    }

    @discardableResult
    private static func writeBoxed(_ value: Value, at region: UnsafeMutableRawPointer) -> Int {
        region.storeBytes(of: PackedValue.Tag.boxed.rawValue, as: UInt8.self)
        let box = Unmanaged.passRetained(ValueBox(value)).toOpaque()
        region.storeBytes(of: UInt(bitPattern: box), toByteOffset: 1, as: UInt.self)
        return PackedValue.boxedSize
    }

    @inline(__always)
    private static func releaseBox(_ base: UnsafeMutableRawPointer, _ regionStart: Int) {
        guard base.load(fromByteOffset: regionStart, as: UInt8.self) == PackedValue.Tag.boxed.rawValue else { return }
        let bits = base.loadUnaligned(fromByteOffset: regionStart + 1, as: UInt.self)
        Unmanaged<ValueBox>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).release()
    }

    /// `key`'s entry (nil when it was never set) and, for an indexed object, the key's hash.
    @inline(__always)
    private func locate(_ key: String) -> (entry: Entry?, hash: Int) {
        let base = self.storage
        if let index = self.index { return self.locate(key, index, base) }
        return withUTF8(of: key) { bytes in
            var offset = Self.headerSize
            let used = self.used
            while offset < used {
                let entry = Self.entry(base, at: offset, modSeqWidth: 0)
                if Self.keyEquals(base, entry, bytes) { return (entry, 0) }
                offset = entry.end
            }
            return (nil, 0)
        }
    }

    /// `locate` in an indexed object (out of line: the scan of a small object is the common case).
    @inline(never)
    private func locate(
        _ key: String, _ index: UnsafeMutableRawPointer, _ base: UnsafeMutableRawPointer
    ) -> (entry: Entry?, hash: Int) {
        withUTF8(of: key) { bytes in
            let hash = Self.hash(bytes)
            return (Self.indexLookup(index, base, bytes, hash: hash, modSeqWidth: self.modSeqWidth), hash)
        }
    }

    @inline(__always)
    private static func keyEquals(
        _ base: UnsafeMutableRawPointer, _ entry: Entry, _ bytes: UnsafeRawBufferPointer
    ) -> Bool {
        guard entry.keyLength == bytes.count else { return false }
        guard let start = bytes.baseAddress, entry.keyLength > 0 else { return true }
        // Keys are short: 8 bytes at a time, then 4, 2 and 1 (cheaper than calling memcmp).
        let stored = UnsafeRawPointer(base + entry.keyStart)
        let length = entry.keyLength
        var at = 0
        while at + 8 <= length {
            if stored.loadUnaligned(fromByteOffset: at, as: UInt64.self)
                != start.loadUnaligned(fromByteOffset: at, as: UInt64.self)
            {
                return false
            }
            at += 8
        }
        if at + 4 <= length {
            if stored.loadUnaligned(fromByteOffset: at, as: UInt32.self)
                != start.loadUnaligned(fromByteOffset: at, as: UInt32.self)
            {
                return false
            }
            at += 4
        }
        if at + 2 <= length {
            if stored.loadUnaligned(fromByteOffset: at, as: UInt16.self)
                != start.loadUnaligned(fromByteOffset: at, as: UInt16.self)
            {
                return false
            }
            at += 2
        }
        return at == length
            || stored.load(fromByteOffset: at, as: UInt8.self) == start.load(fromByteOffset: at, as: UInt8.self)
    }

    // MARK: - Storage

    @inline(__always)
    private func header(_ offset: Int) -> UInt32 {
        self.storage.load(fromByteOffset: offset, as: UInt32.self)
    }

    @inline(__always)
    private func setHeader(_ offset: Int, _ value: UInt32) {
        self.storage.storeBytes(of: value, toByteOffset: offset, as: UInt32.self)
    }

    /// The end of the last entry.
    private var used: Int { Int(self.header(12)) }

    @inline(__always)
    private var isIndexed: Bool { self.header(16) & Self.indexedFlag != 0 }

    /// The bytes of an indexed object's modSeqs (4 or 8), 0 for a small object's varints.
    @inline(__always)
    private var modSeqWidth: Int {
        let flags = self.header(16)
        return flags & Self.indexedFlag == 0 ? 0 : flags & Self.wideFlag == 0 ? 4 : 8
    }

    /// Where the first entry starts.
    private var entriesStart: Int { self.isIndexed ? Self.indexedHeaderSize : Self.headerSize }

    /// The key index, or nil for a small object.
    private var index: UnsafeMutableRawPointer? {
        guard self.isIndexed else { return nil }
        return UnsafeMutableRawPointer(bitPattern: self.storage.loadUnaligned(fromByteOffset: 20, as: UInt.self))
    }

    private func setIndex(_ index: UnsafeMutableRawPointer) {
        self.storage.storeBytes(of: UInt(bitPattern: index), toByteOffset: 20, as: UInt.self)
    }

    /// Makes room for `bytes` bytes in all; returns the (possibly moved) storage. Small objects grow to the size
    /// asked for, indexed ones by half again.
    private func reserve(_ bytes: Int) -> UnsafeMutableRawPointer {
        let base = self.storage
        let capacity = Int(self.header(8))
        guard bytes > capacity else { return base }
        let wanted = self.index == nil ? bytes : max(bytes, capacity + capacity / 2)
        precondition(wanted <= Int(UInt32.max), "an object's entries are limited to 4 GiB")
        let moved = realloc(base, wanted)!
        self.storage = moved
        self.setHeader(8, UInt32(wanted))
        return moved
    }

    // MARK: - Key index

    // The index: capacity (8 bytes), then that many UInt32 slots, each 0 (free) or an entry offset. A key's home slot
    // is its hash scaled to the capacity (the high half of hash × capacity), so any capacity works: the index is
    // rebuilt half full when it passes 3/4, and costs 5.3 to 8 bytes a key (a power of two would cost up to 10.7).

    @inline(__always)
    private static func home(_ hash: Int, _ capacity: Int) -> Int {
        Int(truncatingIfNeeded: UInt64(UInt(bitPattern: hash)).multipliedFullWidth(by: UInt64(capacity)).high)
    }

    private static func hash(_ bytes: UnsafeRawBufferPointer) -> Int {
        var hasher = Hasher()
        hasher.combine(bytes: bytes)
        return hasher.finalize()
    }

    private static func hash(_ base: UnsafeMutableRawPointer, entryAt offset: Int) -> Int {
        let entry = self.entry(base, at: offset, modSeqWidth: 8)  // (the key comes before the modSeq)
        return self.hash(UnsafeRawBufferPointer(start: base + entry.keyStart, count: entry.keyLength))
    }

    private static func indexLookup(
        _ index: UnsafeMutableRawPointer, _ base: UnsafeMutableRawPointer, _ bytes: UnsafeRawBufferPointer, hash: Int,
        modSeqWidth: Int
    ) -> Entry? {
        let capacity = index.load(as: Int.self)
        let slots = (index + 8).assumingMemoryBound(to: UInt32.self)
        var slot = Self.home(hash, capacity)
        while true {
            let offset = Int(slots[slot])
            if offset == 0 { return nil }
            let entry = self.entry(base, at: offset, modSeqWidth: modSeqWidth)
            if self.keyEquals(base, entry, bytes) { return entry }
            slot += 1
            if slot == capacity { slot = 0 }
        }
    }

    private func indexInsert(_ offset: Int, hash: Int) {
        let index = self.index!
        let capacity = index.load(as: Int.self)
        if self.count * 4 > capacity * 3 {
            self.rebuildIndex()  // which indexes the new entry too
            return
        }
        let slots = (index + 8).assumingMemoryBound(to: UInt32.self)
        var slot = Self.home(hash, capacity)
        while slots[slot] != 0 {
            slot += 1
            if slot == capacity { slot = 0 }
        }
        slots[slot] = UInt32(offset)
    }

    /// Removes `offset` from the index (backward-shift deletion keeps every other key reachable).
    private func indexRemove(_ offset: Int, hash: Int) {
        let base = self.storage
        let index = self.index!
        let capacity = index.load(as: Int.self)
        let slots = (index + 8).assumingMemoryBound(to: UInt32.self)
        var hole = Self.home(hash, capacity)
        while Int(slots[hole]) != offset { hole = hole + 1 == capacity ? 0 : hole + 1 }
        var next = hole
        while true {
            next = next + 1 == capacity ? 0 : next + 1
            let moved = Int(slots[next])
            if moved == 0 { break }
            let home = Self.home(Self.hash(base, entryAt: moved), capacity)
            // The entry at `next` may fill the hole unless its home lies cyclically in (hole, next].
            let inRange = hole <= next ? (home > hole && home <= next) : (home > hole || home <= next)
            if !inRange {
                slots[hole] = slots[next]
                hole = next
            }
        }
        slots[hole] = 0
    }

    /// Builds the index anew for every entry, half full (at least 16 slots).
    private func rebuildIndex() {
        if let old = self.index { free(old) }
        let capacity = max(16, self.count * 2)
        let index = calloc(1, 8 + capacity * 4)!
        index.storeBytes(of: capacity, as: Int.self)
        self.setIndex(index)
        let slots = (index + 8).assumingMemoryBound(to: UInt32.self)
        self.forEachEntry { base, entry in
            var slot = Self.home(
                Self.hash(UnsafeRawBufferPointer(start: base + entry.keyStart, count: entry.keyLength)), capacity)
            while slots[slot] != 0 {
                slot += 1
                if slot == capacity { slot = 0 }
            }
            slots[slot] = UInt32(entry.start)
        }
    }

    /// Lays the entries out as an indexed object's with modSeqs of `modSeqWidth` bytes (turning a small object into
    /// an indexed one, or widening an indexed one's modSeqs): every region grows to at least `boxedSize` (so any
    /// later value fits, boxed), then the index is built.
    private func makeIndexed(modSeqWidth: Int) {
        let old = self.storage
        var needed = Self.indexedHeaderSize
        self.forEachEntry { _, entry in
            needed += entry.modSeqAt - entry.start + modSeqWidth + 1 + max(entry.regionLength, PackedValue.boxedSize)
        }
        precondition(needed <= Int(UInt32.max), "an object's entries are limited to 4 GiB")
        let base = malloc(needed)!
        base.copyMemory(from: old, byteCount: Self.headerSize)
        var at = Self.indexedHeaderSize
        self.forEachEntry { old, entry in
            let regionLength = max(entry.regionLength, PackedValue.boxedSize)
            (base + at).copyMemory(from: old + entry.start, byteCount: entry.modSeqAt - entry.start)
            at += entry.modSeqAt - entry.start
            let modSeq = Self.modSeq(old, entry)
            if modSeqWidth == 8 {
                base.storeBytes(of: modSeq, toByteOffset: at, as: UInt64.self)
            } else {
                base.storeBytes(of: UInt32(modSeq), toByteOffset: at, as: UInt32.self)
            }
            base.storeBytes(of: UInt8(regionLength), toByteOffset: at + modSeqWidth, as: UInt8.self)
            at += modSeqWidth + 1
            (base + at).copyMemory(from: old + entry.regionStart, byteCount: entry.regionLength)
            if regionLength > entry.regionLength {
                (base + at + entry.regionLength).initializeMemory(
                    as: UInt8.self, repeating: 0, count: regionLength - entry.regionLength)
            }
            at += regionLength
        }
        if let index = self.index { free(index) }
        free(old)
        self.storage = base
        self.setHeader(8, UInt32(needed))
        self.setHeader(12, UInt32(needed))
        let count = self.header(16) & Self.countMask
        self.setHeader(16, count | Self.indexedFlag | (modSeqWidth == 8 ? Self.wideFlag : 0))
        base.storeBytes(of: UInt(0), toByteOffset: 20, as: UInt.self)
        self.rebuildIndex()
    }

    // MARK: - Varints

    @inline(__always)
    private static func readVarint(_ base: UnsafeMutableRawPointer, _ offset: Int) -> (value: UInt64, size: Int) {
        let first = base.load(fromByteOffset: offset, as: UInt8.self)
        if first < 0x80 { return (UInt64(first), 1) }
        var value = UInt64(first & 0x7f)
        var shift: UInt64 = 7
        var size = 1
        while true {
            let byte = base.load(fromByteOffset: offset + size, as: UInt8.self)
            value |= UInt64(byte & 0x7f) << shift
            size += 1
            if byte < 0x80 { return (value, size) }
            shift += 7
        }
    }

    @inline(__always)
    static func varintSize(_ value: UInt64) -> Int {
        var size = 1
        var rest = value >> 7
        while rest != 0 {
            size += 1
            rest >>= 7
        }
        return size
    }

    @discardableResult
    private static func writeVarint(_ value: UInt64, at pointer: UnsafeMutableRawPointer) -> Int {
        var rest = value
        var size = 0
        while rest >= 0x80 {
            pointer.storeBytes(of: UInt8(truncatingIfNeeded: rest) | 0x80, toByteOffset: size, as: UInt8.self)
            rest >>= 7
            size += 1
        }
        pointer.storeBytes(of: UInt8(rest), toByteOffset: size, as: UInt8.self)
        return size + 1
    }
}
