// Fuzz target: what reaches kvod's TLS before a handshake ends (Sources/TLS/TLSSession.swift, as KVOServer's TLSLayer
// drives it for a connection whose first byte is 0x16): bytes from a would-be TLS client, fed to a server session
// whole and in random pieces (and the whole input again after a genuine ClientHello, so inputs also reach the
// states after it). Nothing may trap; no plaintext may come out of a session whose handshake has not finished (none
// can finish: the harness never sends a client's Finished); what the session answers stays bounded; a session that
// failed delivers nothing more. Docs: docs/RELIABILITY.md; run: .ci/fuzz.sh.
#if canImport(Glibc)
import Glibc
#endif
import FuzzSupport
import TLS

@main
enum FuzzTLS {
    static func main() {
        let server = Self.serverContext()
        let hello = Self.clientHello()
        FuzzDriver.run { input in
            let bytes = Array(input)
            var random = SplitMix64(seed: bytes)
            Self.feed(server, [bytes[...]])
            Self.feed(server, Self.chunks(bytes, &random))
            Self.feed(server, [hello[...]] + Self.chunks(bytes, &random))
        }
    }

    /// Feeds `pieces` to a fresh server session and checks the invariants.
    static func feed(_ context: TLSContext, _ pieces: [ArraySlice<UInt8>]) {
        guard let session = try? TLSSession(context: context, isServer: true) else {
            check(false, "cannot make a session")
            return
        }
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 << 10, alignment: 16)
        defer { scratch.deallocate() }
        var answered = 0
        var failed = false
        for piece in pieces {
            var delivered = 0
            let outcome = Array(piece).withUnsafeBytes { bytes in
                Result { () throws(TLSError) in
                    try session.receive(bytes, scratch: scratch) { delivered += $0.count }
                }
            }
            check(delivered == 0, "plaintext before a finished handshake")
            check(!session.isEstablished, "a handshake finished without a client's Finished")
            if failed { check(delivered == 0, "a failed session delivered more") }
            if case .failure(let error) = outcome {
                check(!error.message.isEmpty, "a failure without a reason")
                failed = true
            }
            session.drainOutput { answered += $0.count }
            check(answered < 64 << 10, "the answers to one would-be client passed 64 KiB")
        }
        session.close()
        session.drainOutput { answered += $0.count }
    }

    /// A server context with the test-only certificate below (written to temporary files, as kvod reads files).
    static func serverContext() -> TLSContext {
        let directory = "/tmp/kvod-fuzz-tls-\(getpid())"
        mkdir(directory, 0o700)
        let certificate = directory + "/cert.pem"
        let key = directory + "/key.pem"
        for (path, text) in [(certificate, Self.certificatePEM), (key, Self.keyPEM)] {
            guard let file = fopen(path, "w") else { fatalError("cannot write \(path)") }
            fputs(text + "\n", file)
            fclose(file)
        }
        do {
            let context = try TLSContext.server(TLSServerSettings(certificatePath: certificate, keyPath: key))
            unlink(certificate)
            unlink(key)
            rmdir(directory)
            return context
        } catch {
            fatalError("the fuzz certificate does not load: \(error)")
        }
    }

    /// A genuine first flight of a client.
    static func clientHello() -> [UInt8] {
        guard let context = try? TLSContext.client(TLSClientSettings(verifyServer: false)),
            let session = try? TLSSession(context: context, isServer: false)
        else { fatalError("cannot make a client session") }
        try? session.handshake()
        var bytes: [UInt8] = []
        session.drainOutput { bytes.append(contentsOf: $0) }
        return bytes
    }

    /// `bytes` cut into pieces of random sizes.
    static func chunks(_ bytes: [UInt8], _ random: inout SplitMix64) -> [ArraySlice<UInt8>] {
        var pieces: [ArraySlice<UInt8>] = []
        var start = 0
        let maxSize = [1, 5, 64, 1000][Int(random.next() % 4)]
        while start < bytes.count {
            let end = min(bytes.count, start + 1 + Int(random.next() % UInt64(maxSize)))
            pieces.append(bytes[start..<end])
            start = end
        }
        return pieces
    }

    // A throwaway EC P-256 key and its self-signed certificate (valid for 100 years), made for this fuzz target only
    // with `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 36500`. Not a secret.
    static let certificatePEM = """
        -----BEGIN CERTIFICATE-----
        MIIBmDCCAT2gAwIBAgIUJCoPYN0hMEA7FI9Uol+Z+LEQxcYwCgYIKoZIzj0EAwIw
        IDEeMBwGA1UEAwwVa3ZvZCBmdXp6ICh0ZXN0IG9ubHkpMCAXDTI2MTEyODA5Mjcy
        OFoYDzIxMjYxMTA0MDkyNzI4WjAgMR4wHAYDVQQDDBVrdm9kIGZ1enogKHRlc3Qg
        b25seSkwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAR3daDBITPI2P8gatxAPKOE
        UFJ1CJdBhlpdMg2AXTsWC7DZi82Sur/brdQRwTpCTu7NBPEhNGxdAM1WtCYAkx0i
        o1MwUTAdBgNVHQ4EFgQUTKmlrRNbQZoilYq/3pI91tvvxWcwHwYDVR0jBBgwFoAU
        TKmlrRNbQZoilYq/3pI91tvvxWcwDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQD
        AgNJADBGAiEAlMdxvU37vBck+Q/y1Y9Ud77aP7ub/FYaF+2Jv20CA4oCIQCd6ME8
        rj/1ZKaDzlPcyHRbRv6iGs+XCJVKlnEJ/T1duQ==
        -----END CERTIFICATE-----
        """
    static let keyPEM = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgQzUUqvXJ/JmmEOCw
        5Aftv9lprXFeIeGZt7sFNVKX0rahRANCAAR3daDBITPI2P8gatxAPKOEUFJ1CJdB
        hlpdMg2AXTsWC7DZi82Sur/brdQRwTpCTu7NBPEhNGxdAM1WtCYAkx0i
        -----END PRIVATE KEY-----
        """
}

/// A small deterministic generator (SplitMix64) seeded from the input, so a crash replays exactly.
struct SplitMix64 {
    private var state: UInt64

    init(seed bytes: [UInt8]) {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325  // FNV-1a
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
        self.state = hash
    }

    mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var value = self.state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}
