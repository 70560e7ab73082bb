// LineFramer: cuts a byte stream into `\n`-terminated lines, stripping one `\r` before the `\n`. Complete lines are
// handed out as pointers into the caller's chunk; only a trailing partial line is copied. An over-long line poisons
// the framer. What a line means (JSON-RPC) is decided elsewhere.

/// Splits a byte stream into lines, enforcing a maximum line length.
///
/// Cost: each byte is scanned once (eight at a time while looking for `\n`); bytes of complete lines that arrive
/// within one chunk are never copied; the partial tail of a chunk is copied once. The framer never holds more than
/// `maxLineBytes + 1` bytes.
public struct LineFramer: Sendable {
    /// The longest line accepted, in bytes, not counting its `\n` or `\r\n` terminator.
    public let maxLineBytes: Int
    /// The start of a line whose `\n` has not arrived yet.
    private var partial: [UInt8] = []
    /// Set once a line was too long; every later feed throws.
    private var isPoisoned = false

    /// A framer that rejects lines longer than `maxLineBytes` (excluding the terminator).
    public init(maxLineBytes: Int) {
        precondition(maxLineBytes >= 0, "maxLineBytes must not be negative")
        self.maxLineBytes = maxLineBytes
    }

    /// The bytes of an incomplete line held since the last feed.
    public var bufferedByteCount: Int { self.partial.count }

    /// Consumes `chunk`, calling `onLine` once per complete line, in order, without its `\n` and without one `\r`
    /// directly before it. Empty lines are delivered as empty buffers.
    ///
    /// The buffer passed to `onLine` is valid only during that call. Throws `.lineTooLong` as soon as a line is
    /// known to exceed `maxLineBytes` (after delivering the complete lines before it), even before its `\n`
    /// arrives; from then on the framer is poisoned and every feed throws `.lineTooLong`. An error thrown by
    /// `onLine` propagates at once; the rest of the chunk is dropped, so the connection should be closed.
    public mutating func feed(
        _ chunk: UnsafeRawBufferPointer, _ onLine: (UnsafeRawBufferPointer) throws(WireError) -> Void
    ) throws(WireError) {
        guard !self.isPoisoned else { throw .lineTooLong(limit: self.maxLineBytes) }
        guard let base = chunk.baseAddress, chunk.count > 0 else { return }
        var lineStart = 0

        if !self.partial.isEmpty {
            guard let newline = Self.firstNewline(in: chunk, from: 0) else {
                try self.checkLength(self.partial.count + chunk.count, lastByte: chunk[chunk.count - 1])
                self.partial.append(contentsOf: chunk)
                return
            }
            let lastByte = newline > 0 ? chunk[newline - 1] : self.partial[self.partial.count - 1]
            try self.checkLength(self.partial.count + newline, lastByte: lastByte)
            self.partial.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[0..<newline]))
            let length = lastByte == 0x0D ? self.partial.count - 1 : self.partial.count
            let result = self.partial.withUnsafeBytes { line in
                Result { () throws(WireError) in try onLine(UnsafeRawBufferPointer(rebasing: line[0..<length])) }
            }
            // Keep a modest buffer for the next partial line; give back a large one.
            self.partial.removeAll(keepingCapacity: self.partial.capacity <= 64 * 1024)
            try result.get()
            lineStart = newline + 1
        }

        while let newline = Self.firstNewline(in: chunk, from: lineStart) {
            var lineEnd = newline
            if lineEnd > lineStart && chunk[lineEnd - 1] == 0x0D { lineEnd -= 1 }
            if lineEnd - lineStart > self.maxLineBytes { try self.poison() }
            try onLine(UnsafeRawBufferPointer(start: base + lineStart, count: lineEnd - lineStart))
            lineStart = newline + 1
        }

        if lineStart < chunk.count {
            try self.checkLength(chunk.count - lineStart, lastByte: chunk[chunk.count - 1])
            self.partial.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[lineStart...]))
        }
    }

    /// Consumes `chunk`; see `feed(_:_:)` for the contract.
    public mutating func feed(
        _ chunk: [UInt8], _ onLine: (UnsafeRawBufferPointer) throws(WireError) -> Void
    ) throws(WireError) {
        try self.feed(chunk[...], onLine)
    }

    /// Consumes `chunk`; see `feed(_:_:)` for the contract.
    public mutating func feed(
        _ chunk: ArraySlice<UInt8>, _ onLine: (UnsafeRawBufferPointer) throws(WireError) -> Void
    ) throws(WireError) {
        let result = chunk.withUnsafeBytes { raw in
            Result { () throws(WireError) in try self.feed(raw, onLine) }
        }
        try result.get()
    }

    // MARK: - Limits

    /// Checks `length` bytes of a line, not counting its `\n`, that end with `lastByte`. A final `\r` is (or may
    /// still turn out to be) part of the terminator, so it does not count.
    private mutating func checkLength(_ length: Int, lastByte: UInt8) throws(WireError) {
        let contentLength = lastByte == 0x0D ? length - 1 : length
        if contentLength > self.maxLineBytes { try self.poison() }
    }

    /// Marks the framer unusable, drops what it buffered and throws `.lineTooLong`.
    private mutating func poison() throws(WireError) {
        self.isPoisoned = true
        self.partial = []
        throw .lineTooLong(limit: self.maxLineBytes)
    }

    // MARK: - Scanning

    /// The index of the first `\n` at or after `start`, or nil. Scans eight bytes per step with the classic
    /// "has zero byte" bit trick (exact for the lowest matching byte), then finishes byte by byte.
    @inline(__always)
    static func firstNewline(in chunk: UnsafeRawBufferPointer, from start: Int) -> Int? {
        guard let base = chunk.baseAddress else { return nil }
        let count = chunk.count
        var position = start
        let newlines: UInt64 = 0x0A0A_0A0A_0A0A_0A0A
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highBits: UInt64 = 0x8080_8080_8080_8080
        while position + 8 <= count {
            // Little-endian view, so the first byte in memory is the least significant one.
            let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: position, as: UInt64.self)) ^ newlines
            let found = (word &- ones) & ~word & highBits
            if found != 0 { return position + found.trailingZeroBitCount / 8 }
            position += 8
        }
        while position < count {
            if base.load(fromByteOffset: position, as: UInt8.self) == 0x0A { return position }
            position += 1
        }
        return nil
    }
}
