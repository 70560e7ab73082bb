// Standard base64 (RFC 4648, padded), which etcd's JSON gateway uses for keys and values. Pure.

/// Base64 encoding and decoding.
public enum PeerBase64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let table: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in Self.alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        return table
    }()

    /// Appends `bytes` as base64 text.
    public static func append(_ bytes: [UInt8], to output: inout [UInt8]) {
        var index = 0
        while index < bytes.count {
            let left = bytes.count - index
            let chunk =
                UInt32(bytes[index]) << 16 | (left > 1 ? UInt32(bytes[index + 1]) << 8 : 0)
                | (left > 2 ? UInt32(bytes[index + 2]) : 0)
            output.append(Self.alphabet[Int(chunk >> 18 & 63)])
            output.append(Self.alphabet[Int(chunk >> 12 & 63)])
            output.append(left > 1 ? Self.alphabet[Int(chunk >> 6 & 63)] : UInt8(ascii: "="))
            output.append(left > 2 ? Self.alphabet[Int(chunk & 63)] : UInt8(ascii: "="))
            index += 3
        }
    }

    /// `bytes` as base64 text.
    public static func encode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        Self.append(bytes, to: &output)
        return String(decoding: output, as: UTF8.self)
    }

    /// The bytes `text` encodes, or nil when it is not padded base64.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let input = Array(text.utf8)
        guard input.count % 4 == 0 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(input.count / 4 * 3)
        var chunk: UInt32 = 0
        var count = 0
        var padding = 0
        for (position, byte) in input.enumerated() {
            if byte == UInt8(ascii: "=") {
                // Padding only in the last two places.
                guard position >= input.count - 2 else { return nil }
                padding += 1
                chunk <<= 6
            } else {
                guard padding == 0 else { return nil }
                let value = Self.table[Int(byte)]
                guard value != 0xFF else { return nil }
                chunk = chunk << 6 | UInt32(value)
            }
            count += 1
            if count == 4 {
                output.append(UInt8(truncatingIfNeeded: chunk >> 16))
                if padding < 2 { output.append(UInt8(truncatingIfNeeded: chunk >> 8)) }
                if padding < 1 { output.append(UInt8(truncatingIfNeeded: chunk)) }
                chunk = 0
                count = 0
            }
        }
        return output
    }
}
