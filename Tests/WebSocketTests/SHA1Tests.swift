// The handshake's hash: SHA-1 against RFC 3174's test vectors (and the empty string), and RFC 6455's example accept
// value (its base64 is WireProtocol's, tested in WireProtocolTests/Base64Tests.swift).

import Testing
@testable import WebSocket
import WireProtocol

struct SHA1Tests {
    static func hexString(_ digest: [UInt8]) -> String {
        digest.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    @Test("SHA-1: RFC 3174 §7.3's four tests and the empty string", arguments: [
        (bytes("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d"),
        (bytes("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1"),
        ([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000), "34aa973cd4c4daa4f61eeb2bdbad27316534016f"),
        (Array(repeating: bytes("0123456701234567012345670123456701234567012345670123456701234567"), count: 10)
            .flatMap { $0 }, "dea356a2cddd90c7a7ecedc5ebb563934f460452"),
        ([], "da39a3ee5e6b4b0d3255bfef95601890afd80709"),
    ])
    func sha1(input: [UInt8], expected: String) {
        #expect(Self.hexString(SHA1.digest(input)) == expected)
    }

    @Test("SHA-1 around the padding boundaries (55, 56, 63, 64 bytes) matches known digests", arguments: [
        (55, "c1c8bbdc22796e28c0e15163d20899b65621d65a"),
        (56, "c2db330f6083854c99d4b5bfb6e8f29f201be699"),
        (64, "0098ba824b5c16427bd7a1122a5a442a25ec644d"),
    ])
    func sha1Boundaries(count: Int, expected: String) {
        #expect(Self.hexString(SHA1.digest([UInt8](repeating: UInt8(ascii: "a"), count: count))) == expected)
    }

    /// RFC 6455 §1.3 gives the digest's bytes (b3 7a 4f 2c ... c4 ea) and their base64. (The brief for this module
    /// quoted "s3pPLMBiTxaQ9kGsmrDu1YpD9cE=", which is not what the RFC says; Python's hashlib agrees with the RFC.)
    @Test("RFC 6455 §1.3: the accept value for the sample key, and its SHA-1 bytes")
    func acceptValue() {
        let digest = SHA1.digest(bytes("dGhlIHNhbXBsZSBub25jZQ==258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
        #expect(Self.hexString(digest) == "b37a4f2cc0624f1690f64606cf385945b2bec4ea")
        #expect(WebSocketHandshake.acceptValue(key: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }
}
