// Masking (RFC 6455 §5.3): XOR with a four-byte key, eight bytes per step. Masking and unmasking are the same
// operation; the decoder unmasks client payloads, the client encoder masks them.

/// The masking transform. A key is held with its first wire byte in the lowest bits.
enum WebSocketMask {
    /// Appends `chunk` to `output`, XOR-ed with the mask `key` starting at key byte `phase` (RFC 6455 §5.3).
    static func appendUnmasked(_ chunk: UnsafeRawBufferPointer, key: UInt32, phase: Int, to output: inout [UInt8]) {
        let start = output.count
        output.append(contentsOf: chunk)
        output.withUnsafeMutableBytes { raw in
            Self.unmask(UnsafeMutableRawBufferPointer(rebasing: raw[start...]), key: key, phase: phase)
        }
    }

    /// XORs `bytes` in place with the mask `key` (its first byte in the lowest bits) starting at key byte `phase`;
    /// eight bytes per step. Masking and unmasking are the same operation.
    static func unmask(_ bytes: UnsafeMutableRawBufferPointer, key: UInt32, phase: Int) {
        guard let base = bytes.baseAddress else { return }
        let shift = UInt32(8 * (phase & 3))
        let rotated = key >> shift | key << (32 - shift)  // smart shifts: `key << 32` is 0
        let wide = UInt64(littleEndian: UInt64(rotated) | UInt64(rotated) << 32)
        let count = bytes.count
        var index = 0
        while index + 8 <= count {
            let word = base.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            base.storeBytes(of: word ^ wide, toByteOffset: index, as: UInt64.self)
            index += 8
        }
        while index < count {
            let maskByte = UInt8(truncatingIfNeeded: rotated >> UInt32(8 * (index & 3)))
            let byte = base.load(fromByteOffset: index, as: UInt8.self)
            base.storeBytes(of: byte ^ maskByte, toByteOffset: index, as: UInt8.self)
            index += 1
        }
    }
}
