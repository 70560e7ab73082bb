// A connection's pending output: a growable byte buffer whose appends are one capacity check and one memcpy.
// (`Array.append(contentsOf:)` costs about 50 instructions a call before copying a byte, and fan-out appends four
// runs per notification.) Loop-owned, never copied.

import WireProtocol

/// Bytes waiting for the socket.
struct OutputBuffer: ~Copyable {
    private var base: UnsafeMutableRawPointer?
    private(set) var count = 0
    private(set) var capacity = 0

    init() {}

    deinit {
        self.base?.deallocate()
    }

    var isEmpty: Bool { self.count == 0 }

    /// Makes room for `extra` more bytes.
    @inline(__always)
    mutating func reserve(_ extra: Int) {
        if self.count &+ extra > self.capacity { self.grow(to: self.count + extra) }
    }

    private mutating func grow(to minimum: Int) {
        let newCapacity = max(minimum, self.capacity * 2, 256)
        let grown = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
        if let base = self.base {
            grown.copyMemory(from: base, byteCount: self.count)
            base.deallocate()
        }
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

    /// Appends an integer's decimal digits, written in place.
    @inline(__always)
    mutating func appendInteger(_ value: Int64) {
        self.reserve(20)
        self.count &+= JSONWriter.writeDecimal(value, to: self.base.unsafelyUnwrapped + self.count)
    }

    /// The bytes, for writing.
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: self.base, count: self.count))
    }

    /// Empties the buffer; keeps its memory when `keepingCapacity`.
    mutating func removeAll(keepingCapacity: Bool = false) {
        self.count = 0
        if !keepingCapacity, let base = self.base {
            base.deallocate()
            self.base = nil
            self.capacity = 0
        }
    }
}
