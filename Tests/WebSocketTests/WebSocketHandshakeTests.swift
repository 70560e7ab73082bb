// WebSocketHandshake: RFC 6455's sample handshake accepted and answered, cut anywhere; leftover bytes; every reject
// status (400, 426, 431) with its headers; the error response's bytes; telling HTTP from JSON; origin checks.

import Testing
@testable import WebSocket

struct WebSocketHandshakeTests {
    static let sample = """
        GET /chat HTTP/1.1\r
        Host: server.example.com\r
        Upgrade: websocket\r
        Connection: Upgrade\r
        Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r
        Origin: http://example.com\r
        Sec-WebSocket-Protocol: chat, superchat\r
        Sec-WebSocket-Version: 13\r
        \r

        """

    static let sampleRequest = WebSocketHandshake.Request(
        path: "/chat", query: nil, host: "server.example.com", origin: "http://example.com",
        key: "dGhlIHNhbXBsZSBub25jZQ==", protocols: ["chat", "superchat"], leftover: [])

    /// Feeds `chunks` until an outcome; nil if none came.
    static func outcome(_ chunks: [[UInt8]], maxHeadBytes: Int = 8192) -> WebSocketHandshake.Outcome? {
        var handshake = WebSocketHandshake(maxHeadBytes: maxHeadBytes)
        for chunk in chunks {
            if let outcome = handshake.feed(chunk) { return outcome }
        }
        return nil
    }

    static func outcome(_ head: String) -> WebSocketHandshake.Outcome? { Self.outcome([bytes(head)]) }

    /// A valid handshake with `replacing` lines swapped in (matched by header name) and `removing` left out.
    static func request(
        _ requestLine: String = "GET /chat HTTP/1.1", replacing: [String] = [], removing: [String] = [],
        adding: [String] = []
    ) -> String {
        var lines = [
            "Host: server.example.com", "Upgrade: websocket", "Connection: Upgrade",
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13",
        ]
        func name(_ line: String) -> Substring { line.split(separator: ":")[0] }
        lines.removeAll { line in removing.contains { name(line) == $0 } }
        for replacement in replacing {
            lines = lines.map { name($0) == name(replacement) ? replacement : $0 }
        }
        return ([requestLine] + lines + adding).map { $0 + "\r\n" }.joined() + "\r\n"
    }

    @Test("RFC 6455's sample handshake is accepted with its path, origin, key and protocols")
    func sampleAccepted() {
        #expect(Self.outcome(Self.sample) == .accept(Self.sampleRequest))
    }

    @Test("the sample cut at any byte gives nothing before its end and the same outcome at it",
        arguments: 0...WebSocketHandshakeTests.sample.utf8.count)
    func splitAnywhere(at cut: Int) {
        let wire = bytes(Self.sample)
        var handshake = WebSocketHandshake()
        let first = handshake.feed(Array(wire[..<cut]))
        if cut < wire.count {
            #expect(first == nil)
            #expect(handshake.feed(Array(wire[cut...])) == .accept(Self.sampleRequest))
        } else {
            #expect(first == .accept(Self.sampleRequest))
        }
    }

    @Test("the sample fed one byte at a time")
    func byteByByte() {
        #expect(Self.outcome(bytes(Self.sample).map { [$0] }) == .accept(Self.sampleRequest))
    }

    @Test("RFC 6455's sample answer: 101 with the accept value, and a selected protocol")
    func acceptResponse() {
        let expected = """
            HTTP/1.1 101 Switching Protocols\r
            Upgrade: websocket\r
            Connection: Upgrade\r
            Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r
            \r

            """
        #expect(WebSocketHandshake.acceptResponse(key: "dGhlIHNhbXBsZSBub25jZQ==") == bytes(expected))
        let withProtocol = WebSocketHandshake.acceptResponse(key: "dGhlIHNhbXBsZSBub25jZQ==", protocol: "chat")
        #expect(String(decoding: withProtocol, as: UTF8.self).hasSuffix("Sec-WebSocket-Protocol: chat\r\n\r\n"))
    }

    @Test("bytes after the head (a pipelined first frame) come back as leftover, and decode")
    func leftover() throws {
        let frame = clientFrame(.text, bytes("Hello"))
        guard case .accept(let request) = Self.outcome([bytes(Self.sample) + frame]) else {
            Issue.record("not accepted")
            return
        }
        #expect(request.leftover == frame)
        #expect(decode(request.leftover) == Decoded(events: [.text("Hello")]))
        // Bytes in a later feed are not the handshake's: only what came with the head's end is leftover.
        var handshake = WebSocketHandshake()
        #expect(handshake.feed(bytes(Self.sample) + frame.prefix(3)) != nil)
    }

    @Test("accepted variations", arguments: [
        (request(replacing: ["Upgrade: WebSocket", "Connection: keep-alive, Upgrade"]), "/chat", nil as String?),
        (request(replacing: ["upgrade: websocket", "CONNECTION: upgrade"]), "/chat", nil),
        (request(replacing: ["Connection:Upgrade ", "Sec-WebSocket-Version:\t13"]), "/chat", nil),
        (request("GET /ws?token=abc&x=1 HTTP/1.1"), "/ws", "token=abc&x=1"),
        (request("GET / HTTP/1.1"), "/", nil),
        (request("GET /? HTTP/1.1"), "/", ""),
        (request(adding: ["Content-Length: 0"]), "/chat", nil),
        ("\r\n" + request(), "/chat", nil),  // a blank line before the request line (RFC 9112 §2.2)
        (request().replacingNewlines(), "/chat", nil),  // bare LF line ends
    ])
    func accepted(head: String, path: String, query: String?) {
        guard case .accept(let request) = Self.outcome(head) else {
            Issue.record("not accepted: \(head.debugDescription)")
            return
        }
        #expect(request.path == path)
        #expect(request.query == query)
        #expect(request.origin == nil)
        #expect(request.protocols == [])
    }

    @Test("protocols from several header lines, trimmed, empty entries dropped")
    func protocols() {
        let head = Self.request(adding: ["Sec-WebSocket-Protocol: a, b", "Sec-WebSocket-Protocol: ,c ,"])
        guard case .accept(let request) = Self.outcome(head) else {
            Issue.record("not accepted")
            return
        }
        #expect(request.protocols == ["a", "b", "c"])
    }

    static let badRequestCases: [(String, String)] = [
        ("a plain HTTP GET", "GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
        ("POST", request("POST /chat HTTP/1.1")),
        ("HTTP/1.0", request("GET /chat HTTP/1.0")),
        ("HTTP/2.0", request("GET /chat HTTP/2.0")),
        ("absolute-form target", request("GET http://example.com/chat HTTP/1.1")),
        ("two spaces in the request line", request("GET  /chat HTTP/1.1")),
        ("a request line with four parts", request("GET /chat x HTTP/1.1")),
        ("only blank lines", "\r\n\r\n"),
        ("no Upgrade", request(removing: ["Upgrade"])),
        ("Upgrade to something else", request(replacing: ["Upgrade: h2c"])),
        ("no Connection", request(removing: ["Connection"])),
        ("Connection without upgrade", request(replacing: ["Connection: keep-alive"])),
        ("Connection: upgraded (not the token)", request(replacing: ["Connection: upgraded"])),
        ("no Host", request(removing: ["Host"])),
        ("two Hosts", request(adding: ["Host: other"])),
        ("no key", request(removing: ["Sec-WebSocket-Key"])),
        ("an empty key", request(replacing: ["Sec-WebSocket-Key: "])),
        ("a key of 15 bytes", request(replacing: ["Sec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAA"])),
        ("a key of 17 bytes", request(replacing: ["Sec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAAA="])),
        ("a key of 16 bytes, not canonical", request(replacing: ["Sec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAB=="])),
        ("a key that is not base64", request(replacing: ["Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ!="])),
        ("two keys", request(adding: ["Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="])),
        ("two Origins", request(adding: ["Origin: http://a", "Origin: http://b"])),
        ("a header line without a colon", request(adding: ["Bogus"])),
        ("a space before the colon", request(adding: ["Bogus : x"])),
        ("a folded header line", request(adding: ["X-A: 1", " continued"])),
        ("a control character in a value", request(adding: ["X-A: a\u{01}b"])),
        ("a body", request(adding: ["Content-Length: 5"])),
        ("chunked", request(adding: ["Transfer-Encoding: chunked"])),
    ]

    @Test("bad handshakes get 400", arguments: WebSocketHandshakeTests.badRequestCases)
    func badRequest(name: String, head: String) {
        guard case .reject(let status, _, let headers) = Self.outcome(head) else {
            Issue.record("\(name): not rejected")
            return
        }
        #expect(status == 400, "\(name)")
        #expect(headers == [], "\(name)")
    }

    @Test("a missing or wrong version gets 426 with Sec-WebSocket-Version: 13", arguments: [
        request(removing: ["Sec-WebSocket-Version"]),
        request(replacing: ["Sec-WebSocket-Version: 8"]),
        request(replacing: ["Sec-WebSocket-Version: 13, 8"]),
        request(adding: ["Sec-WebSocket-Version: 13"]),  // twice
        request(replacing: ["Sec-WebSocket-Version: "]),
    ])
    func wrongVersion(head: String) {
        #expect(
            Self.outcome(head)
                == .reject(
                    status: 426, reason: "unsupported WebSocket version",
                    extraHeaders: [.init(name: "Sec-WebSocket-Version", value: "13")]))
    }

    @Test("a head over maxHeadBytes gets 431, with or without its end; one that fits exactly is read")
    func headTooLarge() {
        let head = bytes(Self.request())
        let tooLarge = WebSocketHandshake.Outcome.reject(
            status: 431, reason: "request head too large", extraHeaders: [])
        #expect(Self.outcome([head], maxHeadBytes: head.count - 1) == tooLarge)
        #expect(Self.outcome([head], maxHeadBytes: head.count) != tooLarge)
        // Never ending: refused once the limit is reached, in pieces.
        let endless = Array(head.dropLast(4)) + Array(repeating: UInt8(ascii: "x"), count: 20_000)
        let pieces = stride(from: 0, to: endless.count, by: 1000).map {
            Array(endless[$0..<min($0 + 1000, endless.count)])
        }
        #expect(Self.outcome(pieces) == tooLarge)
        // The default limit is 8 KiB.
        #expect(Self.outcome(Self.request(adding: ["X-Big: " + String(repeating: "b", count: 8200)])) == tooLarge)
    }

    @Test("the error response: status line, extra headers, text body with its length, Connection: close")
    func errorResponse() {
        let response = WebSocketHandshake.errorResponse(
            status: 426, reason: "unsupported WebSocket version",
            extraHeaders: [.init(name: "Sec-WebSocket-Version", value: "13")])
        let expected = """
            HTTP/1.1 426 Upgrade Required\r
            Sec-WebSocket-Version: 13\r
            Content-Type: text/plain; charset=utf-8\r
            Content-Length: 30\r
            Connection: close\r
            \r
            unsupported WebSocket version

            """
        #expect(String(decoding: response, as: UTF8.self) == expected)
        let lines = [(400, "400 Bad Request"), (403, "403 Forbidden"), (431, "431 Request Header Fields Too Large")]
        for (status, line) in lines {
            let text = String(decoding: WebSocketHandshake.errorResponse(status: status, reason: "x"), as: UTF8.self)
            #expect(text.hasPrefix("HTTP/1.1 \(line)\r\n"))
        }
    }

    @Test("telling an HTTP upgrade from a JSON-RPC line by its first bytes", arguments: [
        ("GET / HTTP/1.1", true), ("GET ", true), ("G", true), ("GE", true), ("GET", true),
        ("", false), ("{\"jsonrpc\"", false), ("[", false), (" {", false), ("\n", false), ("POST /", false),
        ("GEX", false), ("GETS", false), ("get /", false),
    ])
    func looksLikeHTTP(first: String, expected: Bool) {
        #expect(bytes(first).withUnsafeBytes { WebSocketHandshake.looksLikeHTTP($0) } == expected)
    }

    @Test("origin checks", arguments: [
        (nil, [], true),
        (nil, ["https://app.example"], true),  // not a browser
        ("https://evil.example", [], true),  // no allow-list: everyone
        ("https://app.example", ["https://app.example"], true),
        ("https://APP.example", ["https://app.EXAMPLE"], true),
        ("https://app.example:8443", ["https://app.example"], false),
        ("https://app.example:8443", ["https://other", "https://app.example:8443"], true),
        ("http://app.example", ["https://app.example"], false),
        ("https://app.example.evil", ["https://app.example"], false),
        ("null", ["https://app.example"], false),
        ("https://anything", ["https://app.example", "*"], true),
    ] as [(String?, [String], Bool)])
    func origins(origin: String?, allowList: [String], expected: Bool) {
        #expect(WebSocketHandshake.originAllowed(origin, allowList: allowList) == expected)
    }
}

extension String {
    fileprivate func replacingNewlines() -> String {
        String(self.split(separator: "\r\n", omittingEmptySubsequences: false).joined(separator: "\n"))
    }
}
