// A connection's pending output: a growable byte buffer whose appends are one capacity check and one memcpy.
// (`Array.append(contentsOf:)` costs about 50 instructions a call before copying a byte, and fan-out appends four
// runs per notification.) Loop-owned, never copied. Its memory is malloc's, grown with realloc: a large buffer (an
// mmapped chunk) grows by remapping its pages, not by a copy beside the old one, so a buffer near the output limit
// never exists twice; and it can be handed over whole (`takeStorage`) to be freed by whoever writes it.
#if canImport(Glibc)
import Glibc
#endif
import WireProtocol

/// Bytes waiting for the socket.
struct OutputBuffer: ~Copyable {
    private var base: UnsafeMutableRawPointer?
    private(set) var count = 0
    private(set) var capacity = 0

    init() {}

    deinit {
        free(self.base)
    }

    var isEmpty: Bool { self.count == 0 }

    /// Makes room for `extra` more bytes.
    @inline(__always)
    mutating func reserve(_ extra: Int) {
        if self.count &+ extra > self.capacity { self.grow(to: self.count + extra) }
    }

    private mutating func grow(to minimum: Int) {
        let newCapacity = max(minimum, self.capacity * 2, 256)
        // realloc keeps the bytes (and remaps a large block's pages); out of memory is as fatal as for any allocation.
        guard let grown = realloc(self.base, newCapacity) else { fatalError("out of memory: \(newCapacity) bytes") }
        self.base = grown
        self.capacity = newCapacity
    }

    @inline(__always)
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        self.reserve(bytes.count)
        (self.base.unsafelyUnwrapped + self.count).copyMemory(from: source, byteCount: bytes.count)
        self.count += bytes.count
    }

    @inline(__always)
    mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { self.append($0) }
    }

    @inline(__always)
    mutating func append(_ literal: StaticString) {
        self.append(UnsafeRawBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    /// Appends the first `count` (at most 8) bytes of `packed`, little-endian: one store.
    @inline(__always)
    mutating func append(packed: UInt64, count: Int) {
        self.reserve(8)
        self.base.unsafelyUnwrapped.storeBytes(of: packed.littleEndian, toByteOffset: self.count, as: UInt64.self)
        self.count += count
    }

    /// Appends one change notification's four runs (NotificationEncoder.swift) behind one capacity check: `head`,
    /// the subscription id (its `idDigitCount` digits packed in `idDigits`, or `id` formatted when that is 0),
    /// `middle` and `tail`.
    @inline(__always)
    mutating func appendNotification(
        head: StaticString, idDigits: UInt64, idDigitCount: Int, id: Int, middle: UnsafeRawBufferPointer,
        tail: UnsafeRawBufferPointer
    ) {
        let headCount = head.utf8CodeUnitCount
        // 20: the most an id takes formatted (8 are written for packed digits).
        self.reserve(headCount &+ 20 &+ middle.count &+ tail.count)
        var end = self.base.unsafelyUnwrapped + self.count
        end.copyMemory(from: head.utf8Start, byteCount: headCount)
        end += headCount
        if idDigitCount > 0 {
            end.storeBytes(of: idDigits.littleEndian, as: UInt64.self)
            end += idDigitCount
        } else {
            end += Self.writeID(id, to: end)
        }
        if let start = middle.baseAddress {
            end.copyMemory(from: start, byteCount: middle.count)
            end += middle.count
        }
        if let start = tail.baseAddress {
            end.copyMemory(from: start, byteCount: tail.count)
            end += tail.count
        }
        self.count = end - self.base.unsafelyUnwrapped
    }

    /// A subscription id too long to be packed, formatted (out of line: rare).
    @inline(never)
    private static func writeID(_ id: Int, to destination: UnsafeMutableRawPointer) -> Int {
        JSONWriter.writeDecimal(Int64(id), to: destination)
    }

    /// Appends an integer's decimal digits, written in place.
    @inline(__always)
    mutating func appendInteger(_ value: Int64) {
        self.reserve(20)
        self.count &+= JSONWriter.writeDecimal(value, to: self.base.unsafelyUnwrapped + self.count)
    }

    /// The bytes, valid until the buffer next changes.
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: self.base, count: self.count) }

    /// The bytes, for writing.
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: self.base, count: self.count))
    }

    /// Empties the buffer; keeps its memory when `keepingCapacity`.
    mutating func removeAll(keepingCapacity: Bool = false) {
        self.count = 0
        if !keepingCapacity, let base = self.base {
            free(base)
            self.base = nil
            self.capacity = 0
        }
    }

    /// Hands over the bytes' memory (malloc'd: the taker frees it with `free`) and leaves the buffer empty; nil when
    /// there is nothing.
    mutating func takeStorage() -> (base: UnsafeMutableRawPointer, count: Int)? {
        guard let base = self.base, self.count > 0 else { return nil }
        let taken = (base, self.count)
        self.base = nil
        self.count = 0
        self.capacity = 0
        return taken
    }

    /// Puts `bytes` in front of what the buffer holds (one move of the buffer's bytes).
    mutating func prepend(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        self.reserve(bytes.count)
        let base = self.base.unsafelyUnwrapped
        memmove(base + bytes.count, base, self.count)
        base.copyMemory(from: source, byteCount: bytes.count)
        self.count += bytes.count
    }

    /// Exchanges the contents (memory, count, capacity) of two buffers.
    mutating func exchange(with other: inout OutputBuffer) {
        (self.base, other.base) = (other.base, self.base)
        (self.count, other.count) = (other.count, self.count)
        (self.capacity, other.capacity) = (other.capacity, self.capacity)
    }
}

/// Bytes written once and then only read, shared by reference: a subscription's `,"path":"P",` middle, which the
/// subscriptions of one path share. Appending them takes no retain of an array per use.
final class SharedBytes {
    let bytes: UnsafeRawBufferPointer

    init(_ source: [UInt8]) {
        let base = UnsafeMutableRawPointer.allocate(byteCount: max(source.count, 1), alignment: 1)
        source.withUnsafeBytes { if let start = $0.baseAddress { base.copyMemory(from: start, byteCount: $0.count) } }
        self.bytes = UnsafeRawBufferPointer(start: base, count: source.count)
    }

    deinit {
        self.bytes.deallocate()
    }
}

/// A fixed number of reused output buffers, each written again and again in place: the encoded tails of recent
/// changes. Never copied.
struct OutputBuffers: ~Copyable {
    private let buffers: UnsafeMutablePointer<OutputBuffer>
    let count: Int

    init(count: Int) {
        self.buffers = UnsafeMutablePointer<OutputBuffer>.allocate(capacity: count)
        for index in 0..<count { (self.buffers + index).initialize(to: OutputBuffer()) }
        self.count = count
    }

    deinit {
        self.buffers.deinitialize(count: self.count)
        self.buffers.deallocate()
    }

    /// The buffer at `index` (< count), to write in place.
    @inline(__always)
    func buffer(_ index: Int) -> UnsafeMutablePointer<OutputBuffer> {
        self.buffers + index
    }
}
