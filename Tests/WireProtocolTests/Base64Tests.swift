// Base64 (RFC 4648), the one implementation (WebSocket keys, etcd's gateway, bootstrap snapshot chunks): the RFC's
// test vectors both ways, a round trip of every byte value at every length, and the strict refusal of anything that is
// not canonical padded base64.
import Testing
import WireProtocol

struct Base64Tests {
    @Test("RFC 4648 §10's test vectors", arguments: [
        ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ])
    func vectors(plain: String, encoded: String) {
        #expect(Base64.encode(Array(plain.utf8)) == encoded)
        #expect(Base64.decode(encoded) == Array(plain.utf8))
        #expect(Base64.decode(encoded[...]) == Array(plain.utf8))
    }

    @Test func everyByteValueRoundTripsAtEveryLength() {
        let all = (0...255).map { UInt8($0) }
        for count in 0...all.count {
            let text = all.prefix(count).withUnsafeBytes { Base64.encodedBytes($0) }
            #expect(text.count == (count + 2) / 3 * 4)
            #expect(String(decoding: text, as: UTF8.self) == Base64.encode(all.prefix(count)))
            #expect(Base64.decode(String(decoding: text, as: UTF8.self)) == Array(all.prefix(count)))
        }
        #expect(Base64.encode([0xFB, 0xFF]) == "+/8=")
    }

    @Test("decoding refuses what is not canonical padded base64", arguments: [
        "Z", "Zg", "Zg=", "Zh==", "Zm9=", "Z===", "====", "Zm9v=Zm9", "Zg==Zg==", "Zm9v\n", " Zm9v", "Zm-v", "Zm_v",
        "Zm9vY===", "Zm9v!", "=Zm9",
    ])
    func refuses(text: String) {
        #expect(Base64.decode(text) == nil)
    }
}
