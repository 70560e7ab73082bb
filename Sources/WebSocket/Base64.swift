// Base64 (RFC 4648 §4, the standard alphabet with padding), only what the handshake needs: encoding the accept
// value and strictly decoding the client's key.

/// Standard base64 with `=` padding.
enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// `bytes` in base64, padded to a multiple of four characters.
    static func encode(_ bytes: some Collection<UInt8>) -> String {
        let input = Array(bytes)
        var output: [UInt8] = []
        output.reserveCapacity((input.count + 2) / 3 * 4)
        var index = 0
        while index < input.count {
            let remaining = input.count - index
            let group =
                UInt32(input[index]) << 16 | (remaining > 1 ? UInt32(input[index + 1]) << 8 : 0)
                | (remaining > 2 ? UInt32(input[index + 2]) : 0)
            output.append(Self.alphabet[Int(group >> 18 & 63)])
            output.append(Self.alphabet[Int(group >> 12 & 63)])
            output.append(remaining > 1 ? Self.alphabet[Int(group >> 6 & 63)] : UInt8(ascii: "="))
            output.append(remaining > 2 ? Self.alphabet[Int(group & 63)] : UInt8(ascii: "="))
            index += 3
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// The bytes `text` encodes, or nil unless it is canonical padded base64: a multiple of four characters from
    /// the standard alphabet, `=` only as one or two final characters, and zero bits where padding cuts a group.
    static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let characters = Array(text.utf8)
        guard characters.count % 4 == 0 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(characters.count / 4 * 3)
        var index = 0
        while index < characters.count {
            let isLast = index + 4 == characters.count
            var group: UInt32 = 0
            var padding = 0
            for offset in 0..<4 {
                let character = characters[index + offset]
                if character == UInt8(ascii: "=") {
                    // Only in the last group's last two positions, and nothing but padding after it.
                    guard isLast, offset >= 2 else { return nil }
                    padding += 1
                    group <<= 6
                    continue
                }
                guard padding == 0, let value = Self.value(of: character) else { return nil }
                group = group << 6 | UInt32(value)
            }
            // Canonical: the bits the padding drops must be zero.
            if padding == 1 && group & 0xFF != 0 || padding == 2 && group & 0xFFFF != 0 { return nil }
            for shift in stride(from: 16, through: 8 * padding, by: -8) {
                output.append(UInt8(truncatingIfNeeded: group >> UInt32(shift)))
            }
            index += 4
        }
        return output
    }

    private static func value(of character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): character - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): character - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): 62
        case UInt8(ascii: "/"): 63
        default: nil
        }
    }
}
