// Base64 (RFC 4648 §4: the standard alphabet, with padding), the one implementation: the WebSocket handshake's keys,
// etcd's JSON gateway (keys and values) and the snapshot chunks of a follower's bootstrap. Decoding is strict (only
// canonical padded base64). Pointers and masking shifts keep it quick in debug builds too (a bootstrap encodes a
// whole snapshot in its forked child). Pure.

/// Standard base64 with `=` padding.
public enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    /// Byte to its 6-bit value; 0xFF for anything outside the alphabet (`=` included).
    private static let table: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in Self.alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        return table
    }()

    /// `bytes` in base64, padded to a multiple of four characters.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        String(decoding: Array(bytes).withUnsafeBytes { Self.encodedBytes($0) }, as: UTF8.self)
    }

    /// `bytes` in base64, as bytes: one pass into the result.
    public static func encodedBytes(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        let count = bytes.count
        return Self.alphabet.withUnsafeBufferPointer { alphabet in
            [UInt8](unsafeUninitializedCapacity: (count + 2) / 3 * 4) { buffer, written in
                guard count > 0, let input = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self),
                    let table = alphabet.baseAddress, var target = buffer.baseAddress
                else { return }
                var index = 0
                while index + 3 <= count {
                    let chunk = UInt32(input[index]) &<< 16 | UInt32(input[index + 1]) &<< 8 | UInt32(input[index + 2])
                    target[0] = table[Int(chunk &>> 18 & 63)]
                    target[1] = table[Int(chunk &>> 12 & 63)]
                    target[2] = table[Int(chunk &>> 6 & 63)]
                    target[3] = table[Int(chunk & 63)]
                    target += 4
                    index += 3
                }
                let left = count - index
                if left > 0 {
                    let chunk = UInt32(input[index]) &<< 16 | (left == 2 ? UInt32(input[index + 1]) &<< 8 : 0)
                    target[0] = table[Int(chunk &>> 18 & 63)]
                    target[1] = table[Int(chunk &>> 12 & 63)]
                    target[2] = left == 2 ? table[Int(chunk &>> 6 & 63)] : UInt8(ascii: "=")
                    target[3] = UInt8(ascii: "=")
                }
                written = (count + 2) / 3 * 4
            }
        }
    }

    /// The bytes `text` encodes, or nil unless it is canonical padded base64: a multiple of four characters from
    /// the alphabet, `=` only as one or two final characters, and zero bits where padding cuts a group.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var text = String(text)
        return text.withUTF8 { Self.decode($0) }
    }

    /// The bytes `input` (base64 text) encodes, or nil unless it is canonical padded base64.
    public static func decode(_ input: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard input.count % 4 == 0 else { return nil }
        guard input.count > 0 else { return [] }
        let padding =
            input[input.count - 1] != UInt8(ascii: "=") ? 0 : input[input.count - 2] != UInt8(ascii: "=") ? 1 : 2
        let characters = input.count - padding
        var isValid = true
        let output = Self.table.withUnsafeBufferPointer { table in
            [UInt8](unsafeUninitializedCapacity: input.count / 4 * 3) { output, written in
                var chunk: UInt32 = 0
                var count = 0
                var target = 0
                for index in 0..<characters {
                    let value = table[Int(input[index])]
                    guard value != 0xFF else {  // outside the alphabet, or `=` before the end
                        isValid = false
                        return
                    }
                    chunk = chunk &<< 6 | UInt32(value)
                    count += 1
                    if count == 4 {
                        output[target] = UInt8(truncatingIfNeeded: chunk &>> 16)
                        output[target + 1] = UInt8(truncatingIfNeeded: chunk &>> 8)
                        output[target + 2] = UInt8(truncatingIfNeeded: chunk)
                        target += 3
                        chunk = 0
                        count = 0
                    }
                }
                // The last group: 3 characters and `=` (2 bytes, 2 zero bits), or 2 and `==` (1 byte, 4 zero bits).
                switch count {
                case 0: break
                case 3 where chunk & 0x3 == 0:
                    output[target] = UInt8(truncatingIfNeeded: chunk &>> 10)
                    output[target + 1] = UInt8(truncatingIfNeeded: chunk &>> 2)
                    target += 2
                case 2 where chunk & 0xF == 0:
                    output[target] = UInt8(truncatingIfNeeded: chunk &>> 4)
                    target += 1
                default: isValid = false
                }
                written = target
            }
        }
        return isValid ? output : nil
    }
}
