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
        String(decoding: Array(bytes).withUnsafeBytes { Self.encodedBytes($0) }, as: UTF8.self)
    }

    /// `bytes` as base64 text, in bytes (a bootstrap's snapshot, in the forked child: one pass into the result;
    /// pointers and masking shifts keep it quick in debug builds too).
    static func encodedBytes(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
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

    /// The bytes `text` encodes, or nil when it is not base64.
    static func decode(_ text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { Self.decode($0) }
    }

    /// The bytes `input` (base64 text) encodes, or nil when it is not base64.
    static func decode(_ input: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        var isValid = true
        let output = Self.table.withUnsafeBufferPointer { table in
            [UInt8](unsafeUninitializedCapacity: input.count / 4 * 3 + 3) { output, written in
                var chunk: UInt32 = 0
                var count = 0
                var target = 0
                for byte in input {
                    if byte == UInt8(ascii: "=") { break }
                    let value = table[Int(byte)]
                    guard value != 0xFF else {
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
                switch count {
                case 0: break
                case 2:
                    output[target] = UInt8(chunk >> 4 & 0xFF)
                    target += 1
                case 3:
                    output[target] = UInt8(chunk >> 10 & 0xFF)
                    output[target + 1] = UInt8(chunk >> 2 & 0xFF)
                    target += 2
                default: isValid = false
                }
                written = target
            }
        }
        return isValid ? output : nil
    }
}
