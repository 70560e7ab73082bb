// Base64 (RFC 4648), which etcd's JSON gateway and the snapshot chunks of a follower's bootstrap use: the RFC's test
// vectors both ways, a round trip of every byte value at every length modulo 3, and text that is not base64.
@testable import KVOServer
import Testing

struct Base64Tests {
    @Test("RFC 4648's test vectors", arguments: [
        ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ])
    func vectors(plain: String, encoded: String) {
        #expect(Base64.encode(Array(plain.utf8)) == encoded)
        #expect(Base64.decode(encoded) == Array(plain.utf8))
    }

    @Test("every byte value round-trips, whatever the length modulo 3", arguments: 0..<3)
    func roundTrip(extra: Int) {
        let bytes = (0..<(768 + extra)).map { UInt8(truncatingIfNeeded: $0 * 7 + $0 / 256) }
        let text = bytes.withUnsafeBytes { Base64.encodedBytes($0) }
        #expect(text.count == (bytes.count + 2) / 3 * 4)
        #expect(Base64.decode(String(decoding: text, as: UTF8.self)) == bytes)
    }

    @Test func textThatIsNotBase64IsRefused() {
        #expect(Base64.decode("Zm9v!") == nil)
        #expect(Base64.decode("Z") == nil)
        #expect(Base64.decode("Zm9v\n") == nil)
    }
}
