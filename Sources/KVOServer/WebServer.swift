// The web inspector's port (`kvod --web-port`): static files over HTTP/1.1, given by the executable as bytes (this
// module reads no files), answered by HTTPServer.swift on the loop. The page itself talks to kvod over WebSocket on
// kvod's own port as an ordinary session. HTML files are templates: `{{kvod-address}}` becomes kvod's address as the
// browser should reach it, `{{kvod-access}}` "token" or "open". Every response forbids caching and sniffing, and
// carries a Content-Security-Policy that lets the page load only its own scripts and styles and connect only to kvod.

/// A file the inspector port serves.
public struct WebFile: Sendable {
    /// Where it is served: "/index.html", "/kvod.js".
    public var path: String
    /// The `Content-Type` header, from the path's extension unless given.
    public var contentType: String
    public var bytes: [UInt8]

    /// A file at `path` (starting with `/`); its content type follows its extension unless `contentType` is given.
    public init(path: String, bytes: [UInt8], contentType: String? = nil) {
        self.path = path
        self.bytes = bytes
        self.contentType = contentType ?? Self.contentType(of: path)
    }

    /// The content type for a file name's extension (UTF-8 for text); `application/octet-stream` when unknown.
    public static func contentType(of path: String) -> String {
        let suffix = path.split(separator: ".").last.map { $0.lowercased() } ?? ""
        switch suffix {
        case "html": return "text/html; charset=utf-8"
        case "js", "mjs": return "text/javascript; charset=utf-8"
        case "css": return "text/css; charset=utf-8"
        case "json": return "application/json"
        case "svg": return "image/svg+xml"
        case "png": return "image/png"
        case "txt": return "text/plain; charset=utf-8"
        default: return "application/octet-stream"
        }
    }
}

/// What the inspector port serves, and where.
public struct WebConfiguration: Sendable {
    /// The port (on the server's host); 0 picks a free one.
    public var port: Int
    /// The files; `/` is answered with `/index.html`.
    public var files: [WebFile]

    public init(port: Int, files: [WebFile]) {
        self.port = port
        self.files = files
    }
}

/// Answers the inspector port's requests: a pure function of the request, the files, and where kvod listens.
struct WebServer {
    private let files: [String: WebFile]
    /// kvod's protocol address as bound: "127.0.0.1:7070", "[::1]:7070", "0.0.0.0:7070".
    private let kvodAddress: String
    private let kvodPort: Int
    private let accessControlled: Bool

    init(files: [WebFile], kvodAddress: String, kvodPort: Int, accessControlled: Bool) {
        self.files = Dictionary(files.map { ($0.path, $0) }, uniquingKeysWith: { _, last in last })
        self.kvodAddress = kvodAddress
        self.kvodPort = kvodPort
        self.accessControlled = accessControlled
    }

    /// The response to `head`: the file (GET, HEAD), 405 for other methods, 404 for other paths.
    func response(to head: HTTPRequestHead) -> HTTPResponse {
        guard head.method == "GET" || head.method == "HEAD" else {
            return .text(405, "Method Not Allowed", "only GET and HEAD\n", headers: [("Allow", "GET, HEAD")])
        }
        guard let file = self.files[head.path == "/" ? "/index.html" : head.path] else {
            return .text(404, "Not Found", "not found: the inspector is at /\n", headers: self.commonHeaders(head))
        }
        var body = file.bytes
        if file.contentType.hasPrefix("text/html") {
            let text = String(decoding: body, as: UTF8.self)
                .replacing("{{kvod-address}}", with: Self.attributeEscaped(self.address(for: head)))
                .replacing("{{kvod-access}}", with: self.accessControlled ? "token" : "open")
            body = Array(text.utf8)
        }
        return HTTPResponse(
            status: 200, reason: "OK", headers: [("Content-Type", file.contentType)] + self.commonHeaders(head),
            body: body)
    }

    /// Where the browser should reach kvod: its bound address, but for a wildcard bind (`0.0.0.0`, `::`) the host the
    /// browser reached this page by, with kvod's port.
    func address(for head: HTTPRequestHead) -> String {
        let isWildcard = self.kvodAddress.hasPrefix("0.0.0.0:") || self.kvodAddress.hasPrefix("[::]:")
        if isWildcard, let host = Self.requestHost(head) { return "\(host):\(self.kvodPort)" }
        return self.kvodAddress
    }

    private func commonHeaders(_ head: HTTPRequestHead) -> [(name: String, value: String)] {
        // connect-src: kvod as the page is told to reach it, and kvod's port on the host the page came from (the
        // same machine and bind address: "localhost" for "127.0.0.1"). A `?kvod=` elsewhere is refused by the
        // browser, so a link cannot send a token typed into this page to another server.
        // Each over wss too: a page served over https connects with TLS (Protocol/README.md#tls).
        var sources = ["ws://\(self.address(for: head))"]
        if let host = Self.requestHost(head), !sources.contains("ws://\(host):\(self.kvodPort)") {
            sources.append("ws://\(host):\(self.kvodPort)")
        }
        sources += sources.map { "wss" + $0.dropFirst(2) }
        let policy = [
            "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:",
            "connect-src \(sources.joined(separator: " "))", "base-uri 'none'", "form-action 'none'",
            "frame-ancestors 'none'",
        ].joined(separator: "; ")
        return [
            ("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff"),
            ("Content-Security-Policy", policy), ("Referrer-Policy", "no-referrer"),
        ]
    }

    /// The host part of the request's `Host` header ("localhost", "[::1]", "10.0.0.5"), or nil when it has none or
    /// it holds anything but a host name or address.
    static func requestHost(_ head: HTTPRequestHead) -> String? {
        guard let value = head.headers["host"], !value.isEmpty, value.count <= 255 else { return nil }
        let host: Substring
        if value.hasPrefix("[") {
            guard let close = value.firstIndex(of: "]") else { return nil }
            host = value[...close]
        } else {
            host = value.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)[0]
        }
        let allowed = host.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-.:[]".contains($0)) }
        return allowed && !host.isEmpty ? String(host) : nil
    }

    /// `text` safe inside a double-quoted HTML attribute.
    private static func attributeEscaped(_ text: String) -> String {
        text.replacing("&", with: "&amp;").replacing("\"", with: "&quot;").replacing("<", with: "&lt;")
            .replacing(">", with: "&gt;")
    }
}
