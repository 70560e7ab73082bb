// CRC-32 (IEEE 802.3, as zlib and PNG), to tell a torn or damaged journal record or snapshot from a good one. Bytes in
// memory are read eight a step through eight tables ("slicing-by-8"), the last few a byte a step.

/// CRC-32 checksums.
public enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    /// Slicing-by-8: table `k` (entries `256 * k ..< 256 * (k + 1)`) holds the CRC of a byte followed by `k` zero bytes.
    private static let slices: [UInt32] = {
        var slices = Self.table
        for k in 1..<8 {
            for index in 0..<256 {
                let previous = slices[256 * (k - 1) + index]
                slices.append((previous >> 8) ^ Self.table[Int(previous & 0xFF)])
            }
        }
        return slices
    }()

    /// The checksum of `bytes`: through `checksum(_:continuing:)` when they are contiguous (an array, a slice of one),
    /// a byte a step otherwise.
    public static func checksum<Bytes: Sequence>(_ bytes: Bytes) -> UInt32 where Bytes.Element == UInt8 {
        if let crc = bytes.withContiguousStorageIfAvailable({ Self.checksum(UnsafeRawBufferPointer($0), continuing: 0) }) {
            return crc
        }
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = Self.table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }

    /// The checksum of the bytes in `buffer`.
    public static func checksum(_ buffer: UnsafeRawBufferPointer) -> UInt32 {
        Self.checksum(buffer, continuing: 0)
    }

    /// The checksum of the bytes `previous` covered followed by those in `buffer` (as zlib's `crc32(previous, …)`).
    public static func checksum(_ buffer: UnsafeRawBufferPointer, continuing previous: UInt32) -> UInt32 {
        var crc: UInt32 = previous ^ 0xFFFF_FFFF
        var position = 0
        Self.slices.withUnsafeBufferPointer { slices in
            let table = slices.baseAddress.unsafelyUnwrapped  // 2,048 entries; every index below is < 2,048
            if let base = buffer.baseAddress {
                while buffer.count - position >= 8 {
                    let low = crc ^ UInt32(littleEndian: base.loadUnaligned(fromByteOffset: position, as: UInt32.self))
                    let high = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: position + 4, as: UInt32.self))
                    crc =
                        table[7 * 256 + Int(low & 0xFF)] ^ table[6 * 256 + Int((low >> 8) & 0xFF)]
                        ^ table[5 * 256 + Int((low >> 16) & 0xFF)] ^ table[4 * 256 + Int(low >> 24)]
                        ^ table[3 * 256 + Int(high & 0xFF)] ^ table[2 * 256 + Int((high >> 8) & 0xFF)]
                        ^ table[256 + Int((high >> 16) & 0xFF)] ^ table[Int(high >> 24)]
                    position += 8
                }
            }
            while position < buffer.count {
                crc = table[Int((crc ^ UInt32(buffer[position])) & 0xFF)] ^ (crc >> 8)
                position += 1
            }
        }
        return crc ^ 0xFFFF_FFFF
    }
}
