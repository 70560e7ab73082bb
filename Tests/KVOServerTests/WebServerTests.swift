// The web inspector's port without a socket (WebServer.swift): which file answers which request, the template values
// filled into HTML, the headers every response carries, and where the page is told kvod is.
@testable import KVOServer
import Testing

struct WebServerTests {
    static let files = [
        WebFile(path: "/index.html", bytes: Array(#"<meta content="{{kvod-address}}"><i>{{kvod-access}}</i>"#.utf8)),
        WebFile(path: "/kvod.js", bytes: Array("export {};\n".utf8)),
        WebFile(path: "/inspector.css", bytes: Array("body {}".utf8)),
    ]

    static func request(_ path: String, method: String = "GET", host: String? = "127.0.0.1:8080") -> HTTPRequestHead {
        HTTPRequestHead(method: method, path: path, version: "HTTP/1.1", headers: host.map { ["host": $0] } ?? [:])
    }

    static func header(_ response: HTTPResponse, _ name: String) -> String? {
        response.headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    let site = WebServer(files: Self.files, kvodAddress: "127.0.0.1:7070", kvodPort: 7070, accessControlled: false)

    @Test func theRootIsTheIndexWithKvodsAddressFilledIn() {
        let response = self.site.response(to: Self.request("/"))
        #expect(response.status == 200)
        #expect(Self.header(response, "Content-Type") == "text/html; charset=utf-8")
        #expect(String(decoding: response.body, as: UTF8.self) == #"<meta content="127.0.0.1:7070"><i>open</i>"#)
        let tokens = WebServer(files: Self.files, kvodAddress: "127.0.0.1:7070", kvodPort: 7070, accessControlled: true)
        #expect(String(decoding: tokens.response(to: Self.request("/index.html")).body, as: UTF8.self).contains("<i>token</i>"))
    }

    @Test func otherFilesAreServedAsTheyAreWithTheirTypes() {
        let script = self.site.response(to: Self.request("/kvod.js"))
        #expect(script.body == Array("export {};\n".utf8))
        #expect(Self.header(script, "Content-Type") == "text/javascript; charset=utf-8")
        #expect(Self.header(self.site.response(to: Self.request("/inspector.css")), "Content-Type") == "text/css; charset=utf-8")
        #expect(WebFile.contentType(of: "/a.png") == "image/png")
        #expect(WebFile.contentType(of: "/noextension") == "application/octet-stream")
    }

    @Test func everyResponseForbidsCachingAndSniffingAndConfinesThePage() {
        for path in ["/", "/kvod.js", "/missing"] {
            let response = self.site.response(to: Self.request(path))
            #expect(Self.header(response, "Cache-Control") == "no-store")
            #expect(Self.header(response, "X-Content-Type-Options") == "nosniff")
            let policy = Self.header(response, "Content-Security-Policy") ?? ""
            #expect(policy.contains("default-src 'none'"))
            #expect(policy.contains("script-src 'self'"))
            #expect(policy.contains("style-src 'self'"))
            #expect(policy.contains("connect-src ws://127.0.0.1:7070 wss://127.0.0.1:7070;"), "\(policy)")
        }
    }

    @Test func unknownPathsAre404AndOtherMethods405() {
        #expect(self.site.response(to: Self.request("/nope")).status == 404)
        #expect(self.site.response(to: Self.request("/index")).status == 404)
        let post = self.site.response(to: Self.request("/", method: "POST"))
        #expect(post.status == 405)
        #expect(Self.header(post, "Allow") == "GET, HEAD")
        #expect(self.site.response(to: Self.request("/", method: "HEAD")).status == 200)
    }

    @Test func aPageReachedByAnotherNameMayConnectToKvodByThatName() {
        let response = self.site.response(to: Self.request("/", host: "localhost:8080"))
        let policy = Self.header(response, "Content-Security-Policy") ?? ""
        #expect(
            policy.contains("connect-src ws://127.0.0.1:7070 ws://localhost:7070 wss://127.0.0.1:7070 wss://localhost:7070;"),
            "\(policy)")
        #expect(String(decoding: response.body, as: UTF8.self).contains(#"content="127.0.0.1:7070""#))
    }

    @Test("a wildcard bind tells the page the host it came by", arguments: ["0.0.0.0:7070", "[::]:7070"])
    func wildcardBind(bound: String) {
        let site = WebServer(files: Self.files, kvodAddress: bound, kvodPort: 7070, accessControlled: false)
        #expect(site.address(for: Self.request("/", host: "kvod.example:8080")) == "kvod.example:7070")
        #expect(site.address(for: Self.request("/", host: "[fd00::1]:8080")) == "[fd00::1]:7070")
        #expect(site.address(for: Self.request("/", host: nil)) == bound, "no Host: the bound address")
        let body = String(decoding: site.response(to: Self.request("/", host: "10.0.0.5")).body, as: UTF8.self)
        #expect(body.contains(#"content="10.0.0.5:7070""#))
    }

    @Test("a Host header that is not a host name is ignored", arguments: [
        "", "a b", "x\"onload=\"y", "evil.example;script-src *", "[::1", String(repeating: "a", count: 300),
    ])
    func hostileHost(host: String) {
        #expect(WebServer.requestHost(Self.request("/", host: host)) == nil)
        let site = WebServer(files: Self.files, kvodAddress: "0.0.0.0:7070", kvodPort: 7070, accessControlled: false)
        let policy = Self.header(site.response(to: Self.request("/", host: host)), "Content-Security-Policy") ?? ""
        #expect(policy.contains("connect-src ws://0.0.0.0:7070 wss://0.0.0.0:7070;"), "\(policy)")
    }
}
