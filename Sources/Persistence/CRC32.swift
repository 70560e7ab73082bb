// CRC-32 (IEEE 802.3, as zlib and PNG), to tell a torn or damaged journal record from a good one.

/// CRC-32 checksums.
public enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    /// The checksum of `bytes`.
    public static func checksum<Bytes: Sequence>(_ bytes: Bytes) -> UInt32 where Bytes.Element == UInt8 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = Self.table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }

    /// The checksum of the bytes in `buffer` (the fast path for large buffers such as snapshots: no bounds checks).
    public static func checksum(_ buffer: UnsafeRawBufferPointer) -> UInt32 {
        Self.checksum(buffer, continuing: 0)
    }

    /// The checksum of the bytes `previous` covered followed by those in `buffer` (as zlib's `crc32(previous, …)`).
    public static func checksum(_ buffer: UnsafeRawBufferPointer, continuing previous: UInt32) -> UInt32 {
        var crc: UInt32 = previous ^ 0xFFFF_FFFF
        Self.table.withUnsafeBufferPointer { table in
            for byte in buffer { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        }
        return crc ^ 0xFFFF_FFFF
    }
}
