// The metrics endpoint's request parsing without a socket: heads cut anywhere, pipelining, keep-alive rules, limits.
@testable import KVOServer
import Testing

struct HTTPRequestParserTests {
    static let wire = Array("GET /metrics?x=1 HTTP/1.1\r\nHost: localhost\r\nAccept: */*\r\n\r\n".utf8)

    @Test("a request cut at any byte arrives once", arguments: 0...HTTPRequestParserTests.wire.count)
    func splitAnywhere(at cut: Int) throws {
        var parser = HTTPRequestParser()
        var heads: [HTTPRequestHead] = []
        heads += try parser.feed(Self.wire[..<cut])
        heads += try parser.feed(Self.wire[cut...])
        #expect(
            heads == [
                HTTPRequestHead(
                    method: "GET", path: "/metrics", version: "HTTP/1.1",
                    headers: ["host": "localhost", "accept": "*/*"])
            ])
    }

    @Test func pipelinedRequestsComeOutInOrder() throws {
        var parser = HTTPRequestParser()
        let heads = try parser.feed(Array("GET /a HTTP/1.1\r\n\r\nHEAD /b HTTP/1.0\n\nGET /c HTTP/1.1\r\n".utf8))
        #expect(heads.map(\.path) == ["/a", "/b"])
        #expect(try parser.feed(Array("\r\n".utf8)).map(\.method) == ["GET"])
    }

    @Test func keepAliveFollowsTheVersionAndTheConnectionHeader() throws {
        var parser = HTTPRequestParser()
        let heads = try parser.feed(
            Array(
                ("GET / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\nConnection: close\r\n\r\n"
                    + "GET / HTTP/1.0\r\n\r\nGET / HTTP/1.0\r\nconnection: Keep-Alive\r\n\r\n").utf8))
        #expect(heads.map(\.keepsAlive) == [true, false, false, true])
    }

    @Test(
        "bad requests are refused",
        arguments: [
            "GET /metrics\r\n\r\n", "GET /metrics HTTP/2.0\r\n\r\n", "GET metrics HTTP/1.1\r\n\r\n",
            "GET /metrics HTTP/1.1\r\nno colon\r\n\r\n", "POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\n",
            "POST /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
        ])
    func badRequests(text: String) {
        var parser = HTTPRequestParser()
        #expect(throws: HTTPRequestError.self) { try parser.feed(Array(text.utf8)) }
    }

    @Test func anOversizedHeadIsRefusedBeforeItEnds() throws {
        var parser = HTTPRequestParser(maxHeadBytes: 64)
        #expect(try parser.feed(Array("GET / HTTP/1.1\r\n".utf8)).isEmpty)
        #expect(throws: HTTPRequestError.headTooLarge) {
            try parser.feed(Array("X-Padding: \(String(repeating: "x", count: 60))\r\n".utf8))
        }
    }
}
