// Standard base64 (RFC 4648, with padding), which etcd's JSON gateway uses for keys and values, and the replication
// link for snapshot bytes. Pure.

/// Base64 encoding and decoding.
enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let table: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in Self.alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        return table
    }()

    /// `bytes` as base64 text.
    static func encode(_ bytes: some Collection<UInt8>) -> String {
        let input = Array(bytes)
        var output: [UInt8] = []
        output.reserveCapacity((input.count + 2) / 3 * 4)
        var index = 0
        while index + 3 <= input.count {
            let chunk = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
            for shift in [18, 12, 6, 0] { output.append(Self.alphabet[Int(chunk >> UInt32(shift) & 63)]) }
            index += 3
        }
        let left = input.count - index
        if left > 0 {
            let chunk = UInt32(input[index]) << 16 | (left == 2 ? UInt32(input[index + 1]) << 8 : 0)
            output.append(Self.alphabet[Int(chunk >> 18 & 63)])
            output.append(Self.alphabet[Int(chunk >> 12 & 63)])
            output.append(left == 2 ? Self.alphabet[Int(chunk >> 6 & 63)] : UInt8(ascii: "="))
            output.append(UInt8(ascii: "="))
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// The bytes `text` encodes, or nil when it is not base64.
    static func decode(_ text: String) -> [UInt8]? {
        var output: [UInt8] = []
        output.reserveCapacity(text.utf8.count / 4 * 3)
        var chunk: UInt32 = 0
        var count = 0
        for byte in text.utf8 {
            if byte == UInt8(ascii: "=") { break }
            let value = Self.table[Int(byte)]
            guard value != 0xFF else { return nil }
            chunk = chunk << 6 | UInt32(value)
            count += 1
            if count == 4 {
                output.append(UInt8(chunk >> 16 & 0xFF))
                output.append(UInt8(chunk >> 8 & 0xFF))
                output.append(UInt8(chunk & 0xFF))
                chunk = 0
                count = 0
            }
        }
        switch count {
        case 0: break
        case 2: output.append(UInt8(chunk >> 4 & 0xFF))
        case 3:
            output.append(UInt8(chunk >> 10 & 0xFF))
            output.append(UInt8(chunk >> 2 & 0xFF))
        default: return nil
        }
        return output
    }
}
